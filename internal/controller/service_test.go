package controller_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// The EndpointSlices these tests write carry addresses from 10.0.0.0/8:
// the API server refuses loopback there, and nothing ever sends them a
// request (no probe names them, no proxy routes to these Services).

// answerOf is a service state's statusCode, body and Ready reason, read
// from the API server.
func answerOf(state client.Object) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil {
			return err.Error()
		}
		s := state.(interface {
			StateStatus() *v1beta1.DynamicIngressStateStatus
		}).StateStatus()
		return s.StatusCode + " " + s.Body + " " + conditionOf(state, v1beta1.ConditionReady)()
	}
}

// setSlice writes the EndpointSlice, creating or replacing it.
func setSlice(t *testing.T, slice *discoveryv1.EndpointSlice) {
	t.Helper()
	slice = slice.DeepCopy()
	cur := &discoveryv1.EndpointSlice{}
	err := k8s.Get(ctx, client.ObjectKeyFromObject(slice), cur)
	switch {
	case apierrors.IsNotFound(err):
		err = k8s.Create(ctx, slice)
	case err == nil:
		slice.ResourceVersion = cur.ResourceVersion
		err = k8s.Update(ctx, slice)
	}
	if err != nil {
		t.Fatalf("writing EndpointSlice %s: %v", slice.Name, err)
	}
}

// lastUpdate is the state's status.lastUpdateTime.
func lastUpdate(t *testing.T, state *v1beta1.DynamicIngressState) time.Time {
	t.Helper()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil {
		t.Fatal(err)
	}
	if state.Status.LastUpdateTime == nil {
		return time.Time{}
	}
	return state.Status.LastUpdateTime.Time
}

const (
	available   = `200 {"available":true} True/EndpointsCounted`
	unavailable = `503 {"available":false} True/EndpointsCounted`
)

// TestServiceStateCrossesBothWays: a state that follows a Service turns 503
// once its last ready endpoint has been gone for unavailableAfter, its
// follower serves the sorry page, and both come back once endpoints have
// been ready for availableAfter; never sooner.
func TestServiceStateCrossesBothWays(t *testing.T) {
	ns := newNamespace(t)
	slice := builders.EndpointSlice(ns, "app-1", "app").Ready("10.0.0.1", "10.0.0.2")
	create(t, builders.Service(ns, "app"), slice.Obj().DeepCopy())
	state := builders.ServiceState(ns, "app-up", "app").UnavailableAfter(2 * time.Second).AvailableAfter(3 * time.Second).Obj()
	di := builders.DynamicIngress(ns, "web").State("app-up").ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "app")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, state, di)
	eventually(t, answerOf(state)).Should(Equal(available))
	eventually(t, backendOf(t, ns, "web")).Should(Equal("app"))
	g := NewWithT(t)
	g.Expect(conditionMessage(state, v1beta1.ConditionReady)()).To(Equal("Service " + ns + "/app had 2 ready endpoints (minReady 1) when the answer turned 200"))

	// The app's pods go unready (still there, as in a failing readiness
	// probe).
	// Taken before the write: the manager may see it before the write
	// returns.
	gone := time.Now()
	setSlice(t, builders.EndpointSlice(ns, "app-1", "app").NotReady("10.0.0.1", "10.0.0.2").Obj())
	eventually(t, answerOf(state)).Should(Equal(unavailable))
	eventually(t, backendOf(t, ns, "web")).Should(Equal("sorry"))
	turned := lastUpdate(t, state).Sub(gone)
	g.Expect(turned).To(BeNumerically(">=", 2*time.Second), "the answer turned before unavailableAfter")
	g.Expect(conditionMessage(state, v1beta1.ConditionReady)()).To(Equal("Service " + ns + "/app had 0 ready endpoints (minReady 1) when the answer turned 503"))
	g.Expect(state.Status.Mode).To(Equal(v1beta1.StateModeService))
	g.Expect(state.Status.History[0].Cause).To(Equal(v1beta1.HistoryCauseService))
	t.Logf("503 after %v (unavailableAfter 2s)", turned)

	back := time.Now()
	setSlice(t, builders.EndpointSlice(ns, "app-1", "app").Ready("10.0.0.3").Obj())
	eventually(t, answerOf(state)).Should(Equal(available))
	eventually(t, backendOf(t, ns, "web")).Should(Equal("app"))
	turned = lastUpdate(t, state).Sub(back)
	g.Expect(turned).To(BeNumerically(">=", 3*time.Second), "the answer turned before availableAfter")
	t.Logf("200 after %v (availableAfter 3s)", turned)
}

// TestServiceStateHoldsThroughDipsAndChurn: ready endpoints churning above
// minReady (a rolling update) and a dip shorter than unavailableAfter send
// no write request at all: no status, no event, no target.
func TestServiceStateHoldsThroughDipsAndChurn(t *testing.T) {
	ns := newNamespace(t)
	create(t, builders.Service(ns, "app"), builders.EndpointSlice(ns, "app-1", "app").Ready("10.0.1.1", "10.0.1.2", "10.0.1.3").Obj())
	state := builders.ServiceState(ns, "app-up", "app").UnavailableAfter(3 * time.Second).AvailableAfter(time.Second).Obj()
	di := builders.DynamicIngress(ns, "web").State("app-up").ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "app")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, state, di)
	eventually(t, answerOf(state)).Should(Equal(available))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	since := lastUpdate(t, state)
	time.Sleep(time.Second) // the switch's own writes settle
	before := writeCounts()

	// A rolling update: between 2 and 6 ready endpoints, new addresses.
	for i := range 20 {
		var addrs []string
		for j := range 2 + i%5 {
			addrs = append(addrs, fmt.Sprintf("10.0.2.%d", 10*i+j))
		}
		setSlice(t, builders.EndpointSlice(ns, "app-1", "app").Ready(addrs...).NotReady("10.0.3.1").Obj())
		time.Sleep(100 * time.Millisecond)
	}
	// A dip to none, shorter than unavailableAfter, and back.
	setSlice(t, builders.EndpointSlice(ns, "app-1", "app").NotReady("10.0.1.1").Obj())
	time.Sleep(1500 * time.Millisecond)
	setSlice(t, builders.EndpointSlice(ns, "app-1", "app").Ready("10.0.1.1").Obj())
	// Past the dip's unavailableAfter.
	time.Sleep(3 * time.Second)

	g := NewWithT(t)
	g.Expect(inNamespace(writesSince(before), ns)).To(BeEmpty())
	g.Expect(answerOf(state)()).To(Equal(available))
	g.Expect(lastUpdate(t, state)).To(Equal(since))
}

// TestServiceStateWithoutItsService: a state whose Service does not exist
// has no response (Ready=False/ServiceNotFound, and its follower keeps its
// mode by its failurePolicy); once the Service is created without
// EndpointSlices it has 0 ready endpoints and answers 503, and 200 once an
// endpoint has been ready for availableAfter.
func TestServiceStateWithoutItsService(t *testing.T) {
	ns := newNamespace(t)
	state := builders.ServiceState(ns, "later-up", "later").AvailableAfter(time.Second).Obj()
	create(t, state)
	eventually(t, answerOf(state)).Should(Equal("  False/ServiceNotFound"))
	NewWithT(t).Expect(conditionMessage(state, v1beta1.ConditionReady)()).To(Equal("Service " + ns + "/later does not exist"))

	create(t, builders.Service(ns, "later"))
	eventually(t, answerOf(state)).Should(Equal(unavailable))
	create(t, builders.EndpointSlice(ns, "later-1", "later").Ready("10.0.4.1").Obj())
	eventually(t, answerOf(state)).Should(Equal(available))

	// The Service goes: no response again.
	if err := k8s.Delete(ctx, builders.Service(ns, "later")); err != nil {
		t.Fatal(err)
	}
	eventually(t, answerOf(state)).Should(Equal("  False/ServiceNotFound"))
}

// TestClusterServiceStateFollowedThroughItsGrant: a platform's cluster state
// follows a Service in the app's namespace; a switch in an admitted
// namespace flips to the sorry page when the Service's endpoints go.
func TestClusterServiceStateFollowedThroughItsGrant(t *testing.T) {
	app := newNamespace(t)
	team := newNamespace(t)
	labelNamespace(t, team, "tier", "public-"+app)
	create(t, builders.Service(app, "app"), builders.EndpointSlice(app, "app-1", "app").Ready("10.0.5.1").Obj())
	cluster := builders.ServiceState("", suite.NameOf(t), "app").ServiceNamespace(app).UnavailableAfter(0).
		Cluster().FollowersMatching(map[string]string{"tier": "public-" + app}).Obj()
	create(t, cluster)
	deleteAfter(t, cluster)
	di := builders.DynamicIngress(team, "web").ClusterState(cluster.Name).ExpectCode("503").
		Passive(builders.IngressTo("www.example.com", "app")).Active(builders.IngressTo("www.example.com", "sorry")).Obj()
	create(t, di)
	eventually(t, answerOf(cluster)).Should(Equal(available))
	eventually(t, backendOf(t, team, "web")).Should(Equal("app"))

	setSlice(t, builders.EndpointSlice(app, "app-1", "app").Endpoint("10.0.5.1", nil, new(true)).Obj())
	eventually(t, answerOf(cluster)).Should(Equal(unavailable))
	eventually(t, backendOf(t, team, "web")).Should(Equal("sorry"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("True/Matched"))
}

// serviceRestartNamespace belongs to the managers that
// TestRestartedManagerKeepsAServiceAnswer starts and stops.
const serviceRestartNamespace = "service-restart"

// TestRestartedManagerKeepsAServiceAnswer: a manager that starts while the
// answer still holds writes nothing; one that starts after the count
// crossed waits unavailableAfter from its start before the answer turns.
func TestRestartedManagerKeepsAServiceAnswer(t *testing.T) {
	cfg := rest.CopyConfig(testConfig)
	cfg.Wrap(countWrites)
	opts := controller.Options{MaxConcurrentReconciles: 2, StateMaxConcurrentReconciles: 2, Namespaces: []string{serviceRestartNamespace}}
	start := func() func() {
		return restartOwnManager(t, serviceRestartNamespace, cfg, controller.CacheOptions(true, true), opts)
	}
	stop := startOwnManager(t, serviceRestartNamespace, cfg, controller.CacheOptions(true, true), opts)
	for _, obj := range []client.Object{builders.Service(serviceRestartNamespace, "app"), builders.EndpointSlice(serviceRestartNamespace, "app-1", "app").Obj()} {
		if err := k8s.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	create(t, builders.Service(serviceRestartNamespace, "app"))
	setSlice(t, builders.EndpointSlice(serviceRestartNamespace, "app-1", "app").Ready("10.0.6.1").Obj())
	state := builders.ServiceState(serviceRestartNamespace, "app-up", "app").UnavailableAfter(2 * time.Second).Obj()
	create(t, state)
	eventually(t, answerOf(state)).Should(Equal(available))
	stop()

	// The answer still holds: the new manager writes nothing.
	before := writeCounts()
	stop = start()
	time.Sleep(3 * time.Second)
	NewWithT(t).Expect(inNamespace(writesSince(before), serviceRestartNamespace)).To(BeEmpty())
	stop()

	// The endpoints went while no manager ran, longer ago than
	// unavailableAfter: the timer starts with the manager.
	setSlice(t, builders.EndpointSlice(serviceRestartNamespace, "app-1", "app").NotReady("10.0.6.1").Obj())
	time.Sleep(3 * time.Second)
	started := time.Now()
	start()
	eventually(t, answerOf(state)).Should(Equal(unavailable))
	turned := lastUpdate(t, state).Sub(started)
	NewWithT(t).Expect(turned).To(BeNumerically(">=", 2*time.Second), "the answer turned before unavailableAfter from the start")
	t.Logf("503 %v after the start (unavailableAfter 2s)", turned)
}
