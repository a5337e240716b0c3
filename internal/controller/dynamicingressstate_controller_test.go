package controller_test

import (
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// flagService is a local HTTP endpoint playing a feature-flag service.
type flagService struct {
	addr string
	code atomic.Int32
	body atomic.Value
	// down makes every request fail: the connection is closed unanswered.
	down atomic.Bool
	srv  *http.Server
}

func startFlagService(t *testing.T, code int, body string) *flagService {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &flagService{addr: l.Addr().String()}
	f.code.Store(int32(code))
	f.body.Store(body)
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if f.down.Load() {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		w.WriteHeader(int(f.code.Load()))
		_, _ = fmt.Fprint(w, f.body.Load().(string))
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = f.srv.Serve(l) }()
	t.Cleanup(func() { _ = f.srv.Close() })
	return f
}

func (f *flagService) url() string { return "http://" + f.addr + "/flags/killswitch" }

func stateStatus(state *v1beta1.DynamicIngressState) func() string {
	return func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%s %q", state.Status.StatusCode, state.Status.Body)
	}
}

func TestProbedStateFollowsEndpoint(t *testing.T) {
	ns := newNamespace(t)
	flags := startFlagService(t, 200, `{"enabled": true}`)
	state := builders.ProbedState(ns, "killswitch", flags.url()).Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(2).Obj()
	di := builders.DynamicIngress(ns, "shop").State("killswitch").ExpectCode("200").
		Passive(builders.IngressTo("shop.example.com", "shop").Label("app", "shop")).
		Active(builders.IngressTo("shop.example.com", "sorry").Label("app", "sorry")).Obj()
	create(t, state, di)

	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/ProbeSucceeded"))
	eventually(t, stateStatus(state)).Should(Equal(`200 "{\"enabled\": true}"`))
	if state.Status.Mode != v1beta1.StateModeProbe || state.Status.LastUpdateTime == nil {
		t.Errorf("mode %q, lastUpdateTime %v: want Probe and a time", state.Status.Mode, state.Status.LastUpdateTime)
	}
	eventually(t, backendOf(t, ns, "shop")).Should(Equal("sorry"))

	// Any HTTP response is an observation: 503 is recorded, the DI goes passive.
	flags.body.Store("unavailable")
	flags.code.Store(503)
	eventually(t, stateStatus(state)).Should(Equal(`503 "unavailable"`))
	NewWithT(t).Expect(conditionOf(state, v1beta1.ConditionReady)()).To(Equal("True/ProbeSucceeded"))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NotMatched"))
	eventually(t, backendOf(t, ns, "shop")).Should(Equal("shop"))

	// Back to 200, then the endpoint goes away.
	flags.code.Store(200)
	eventually(t, backendOf(t, ns, "shop")).Should(Equal("sorry"))
	_ = flags.srv.Close()

	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
	cond := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady)
	if !strings.Contains(cond.Message, "connection refused") {
		t.Errorf("ProbeFailed message %q does not carry the error", cond.Message)
	}
	// (TestProbeFailureKeepsResponseBelowThreshold holds the first failure
	// to keeping the last response.) The threshold clears the response, so
	// the DI falls back to passive.
	eventually(t, stateStatus(state)).Should(Equal(` ""`))
	eventually(t, conditionOf(di, v1beta1.ConditionActive)).Should(Equal("False/NoResponse"))
	eventually(t, backendOf(t, ns, "shop")).Should(Equal("shop"))
	eventually(t, eventReasons(ns, "killswitch")).Should(ContainElement("ProbeFailed"))
}

func TestProbeFailureKeepsResponseBelowThreshold(t *testing.T) {
	ns := newNamespace(t)
	flags := startFlagService(t, 200, "ok")
	state := builders.ProbedState(ns, "s", flags.url()).Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(100).Obj()
	create(t, state)
	eventually(t, stateStatus(state)).Should(Equal(`200 "ok"`))
	_ = flags.srv.Close()
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
	NewWithT(t).Consistently(stateStatus(state), 3*time.Second, 200*time.Millisecond).Should(Equal(`200 "ok"`))
}

func TestProbeGuardRefusesDeniedAddress(t *testing.T) {
	ns := newNamespace(t)
	// The suite's guard denies 192.0.2.0/24 (TEST-NET-1).
	state := builders.ProbedState(ns, "s", "http://192.0.2.10/").Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(1).Obj()
	create(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("False/ProbeFailed"))
	cond := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady)
	if want := "probe guard: address 192.0.2.10 is inside denied range 192.0.2.0/24"; !strings.Contains(cond.Message, want) {
		t.Errorf("message %q, want it to contain %q", cond.Message, want)
	}
}

func TestStateSwitchesBetweenFixedAndProbe(t *testing.T) {
	ns := newNamespace(t)
	flags := startFlagService(t, 204, "")
	state := builders.FixedState(ns, "s", "418", "teapot").Obj()
	create(t, state)
	eventually(t, conditionOf(state, v1beta1.ConditionReady)).Should(Equal("True/Fixed"))
	eventually(t, stateStatus(state)).Should(Equal(`418 "teapot"`))
	NewWithT(t).Expect(state.Status.Mode).To(Equal(v1beta1.StateModeFixed))

	patch := client.MergeFrom(state.DeepCopy())
	state.Spec.FixedResponse = nil
	interval := metav1.Duration{Duration: time.Second}
	state.Spec.Probe = &v1beta1.HTTPProbe{URL: flags.url(), Interval: &interval}
	if err := k8s.Patch(ctx, state, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, stateStatus(state)).Should(Equal(`204 ""`))
	NewWithT(t).Expect(conditionOf(state, v1beta1.ConditionReady)()).To(Equal("True/ProbeSucceeded"))
	NewWithT(t).Expect(state.Status.Mode).To(Equal(v1beta1.StateModeProbe))
}

func TestNoWritesInSteadyState(t *testing.T) {
	ns := newNamespace(t)
	flags := startFlagService(t, 200, `{"ok":true}`)
	states := []*v1beta1.DynamicIngressState{
		builders.ProbedState(ns, "probed", flags.url()).Interval(time.Second).Timeout(time.Second / 2).FailureThreshold(3).Obj(),
		builders.FixedState(ns, "fixed", "200", "").Obj(),
	}
	create(t, states[0], states[1])
	var dis []*v1beta1.DynamicIngress
	for i := range 10 {
		stateName := states[i%2].Name
		name := fmt.Sprintf("di-%d", i)
		passive := builders.IngressTo(name+".example.com", "web").Label("app", "web").Annotation("a", "b")
		var active *builders.IngressShape
		if i%3 != 0 {
			active = builders.IngressTo(name+".example.com", "sorry").Label("app", "sorry")
		}
		di := builders.DynamicIngress(ns, name).State(stateName).ExpectCode("200").Passive(passive).Active(active).Obj()
		dis = append(dis, di)
		create(t, di)
	}
	for _, di := range dis {
		eventually(t, conditionOf(di, v1beta1.ConditionReady)).Should(Equal("True/Synced"))
	}
	// Converged: let in-flight writes (events, last status) settle.
	eventually(t, func() map[string]int64 {
		before := writeCounts()
		time.Sleep(1500 * time.Millisecond)
		return inNamespace(writesSince(before), ns)
	}).Should(BeEmpty())

	before := resourceVersions(t, ns)
	counts := writeCounts()
	time.Sleep(4 * time.Second) // four probe intervals
	if sent := writesSince(counts); len(inNamespace(sent, ns)) != 0 {
		t.Errorf("the manager sent write requests in steady state, want none: %v", inNamespace(sent, ns))
	} else if len(sent) != 0 {
		t.Logf("writes in other tests' namespaces meanwhile: %v", sent)
	}
	if diff := diffMaps(before, resourceVersions(t, ns)); diff != "" {
		t.Errorf("objects changed in steady state: %s", diff)
	}

	// A new body that no DynamicIngress compares makes every DynamicIngress
	// of the fixed state reconcile; the state's status is written twice:
	// the change, and its flip summary once its followers showed it
	// (docs/behaviour.md, "History").
	counts = writeCounts()
	setFixedBody(t, states[1], "new body")
	eventually(t, stateStatus(states[1])).Should(Equal(`200 "new body"`))
	time.Sleep(2 * time.Second)
	want := map[string]int64{ns + " dynamicingressstates/status": 2}
	if sent := inNamespace(writesSince(counts), ns); !reflect.DeepEqual(sent, want) {
		t.Errorf("the manager sent %v after a change no DynamicIngress compares, want %v (the state's status, then its flip summary)", sent, want)
	}
}

// resourceVersions maps every state, DynamicIngress and Ingress of ns to
// its resourceVersion.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lists := map[string]client.ObjectList{
		"state": &v1beta1.DynamicIngressStateList{}, "di": &v1beta1.DynamicIngressList{}, "ingress": &networkingv1.IngressList{},
	}
	for kind, list := range lists {
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, _ := meta.ExtractList(list)
		for _, item := range items {
			obj := item.(client.Object)
			out[kind+"/"+obj.GetName()] = obj.GetResourceVersion()
		}
	}
	return out
}

func diffMaps(a, b map[string]string) string {
	var diffs []string
	for k, v := range a {
		if b[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", k, v, b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, k+" appeared")
		}
	}
	return strings.Join(diffs, ", ")
}
