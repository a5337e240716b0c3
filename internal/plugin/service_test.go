package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// States that follow a Service: status shows the Service, its ready count
// and how the count stands against the answer.

// answerAt is when the service states of these tests last changed their
// answer; readAt when the plugin reads them.
var (
	answerAt = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	readAt   = answerAt.Add(4*time.Minute + 10*time.Second)
)

// answeredService gives the state the status the manager writes when it
// first counts ready endpoints of its Service at answerAt (exists false:
// the Service is missing), and returns it.
func answeredService(state *v1beta1.DynamicIngressState, exists bool, ready int) *v1beta1.DynamicIngressState {
	state.Status, _ = decision.ServiceStatus(state, decision.ServiceCount{Exists: exists, Ready: ready}, answerAt, answerAt)
	return state
}

// upState is the DynamicIngressState storefront-up in shop, following the
// Service storefront, answered from ready endpoints at answerAt.
func upState(ready int, change func(*builders.StateWrapper)) *v1beta1.DynamicIngressState {
	w := builders.ServiceState(ns, "storefront-up", "storefront")
	if change != nil {
		change(w)
	}
	return answeredService(w.Obj(), true, ready)
}

// platformUp is the ClusterDynamicIngressState platform-up following the
// Service platform/storefront, answered from ready endpoints at answerAt.
func platformUp(ready int) *v1beta1.ClusterDynamicIngressState {
	cs := builders.ServiceState("", "platform-up", "storefront").ServiceNamespace("platform").Cluster().FollowersAll().Obj()
	cs.Status = answeredService(cs.StateView(), true, ready).Status
	return cs
}

// sorryOn503 is a DynamicIngress web in shop that goes active when its
// state answers 503 (the state named by follow).
func sorryOn503(follow func(*builders.DynamicIngressWrapper) *builders.DynamicIngressWrapper) *v1beta1.DynamicIngress {
	w := builders.DynamicIngress(ns, "web").ExpectCode("503").
		Passive(builders.IngressTo("shop.example.com", "storefront")).
		Active(builders.IngressTo("shop.example.com", "sorry"))
	return follow(w).Obj()
}

func followsUp(w *builders.DynamicIngressWrapper) *builders.DynamicIngressWrapper {
	return w.State("storefront-up")
}

func followsPlatformUp(w *builders.DynamicIngressWrapper) *builders.DynamicIngressWrapper {
	return w.ClusterState("platform-up")
}

// slice is an EndpointSlice of the Service ns/service with ready and not
// ready endpoints at these addresses.
func slice(namespace, name, service string, ready []string, notReady ...string) *discoveryv1.EndpointSlice {
	return builders.EndpointSlice(namespace, name, service).Ready(ready...).NotReady(notReady...).Obj()
}

// refuseSlices refuses every list of EndpointSlices, as a role without
// them (view bound in another namespace than the Service's) does.
func refuseSlices(r request) error {
	if r.resource == "endpointslices.discovery.k8s.io" {
		return forbidden(r)
	}
	return nil
}

// TestStatusOfServiceState: what status shows of a state that follows a
// Service, read at readAt, 4m10s after the answer last changed.
func TestStatusOfServiceState(t *testing.T) {
	upRef := v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: "storefront-up"}
	platformRef := v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "platform-up"}
	tests := []struct {
		name    string
		ref     v1beta1.StateReference
		refused refuse
		objs    []client.Object
		// state is the state's status code ("-" for none) and reason.
		state string
		// lines are what status prints of the Service.
		lines []string
		notes []string
		// web is the follower's mode.
		web string
	}{
		{"available, counted from the EndpointSlices now", upRef, nil,
			// 2 ready when the answer turned 200, 3 now.
			[]client.Object{upState(2, nil), sorryOn503(followsUp),
				// An address in two slices counts once; not ready, terminating
				// and another Service's endpoints do not count.
				slice(ns, "storefront-a", "storefront", []string{"10.0.0.1", "10.0.0.2"}, "10.0.0.9"),
				builders.EndpointSlice(ns, "storefront-b", "storefront").Ready("10.0.0.2", "10.0.0.3").
					Endpoint("10.0.0.8", ptr.To(true), ptr.To(true)).Obj(),
				slice(ns, "checkout-a", "checkout", []string{"10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4"})},
			"200 EndpointsCounted",
			[]string{
				"Service shop/storefront: 3 ready endpoints, minReady 1 (unavailableAfter 10s, availableAfter 30s)",
				"The count is at or above minReady: on its side since 2026-12-02T09:00:00Z (4m10s), when the answer turned 200",
			}, nil, "passive"},
		{"unavailable", upRef, nil,
			[]client.Object{upState(1, func(w *builders.StateWrapper) { w.MinReady(2) }), sorryOn503(followsUp),
				slice(ns, "storefront-a", "storefront", []string{"10.0.0.1"}, "10.0.0.2", "10.0.0.3")},
			"503 EndpointsCounted",
			[]string{
				"Service shop/storefront: 1 ready endpoint, minReady 2 (unavailableAfter 10s, availableAfter 30s)",
				"The count is below minReady: on its side since 2026-12-02T09:00:00Z (4m10s), when the answer turned 503",
			}, nil, "active"},
		{"the count fell below minReady: the answer waits unavailableAfter", upRef, nil,
			[]client.Object{upState(3, nil), sorryOn503(followsUp),
				slice(ns, "storefront-a", "storefront", nil, "10.0.0.1", "10.0.0.2", "10.0.0.3")},
			"200 EndpointsCounted",
			[]string{
				"Service shop/storefront: 0 ready endpoints, minReady 1 (unavailableAfter 10s, availableAfter 30s)",
				"The count is below minReady now: the answer turns 503 once it stays there for 10s (unavailableAfter); 200 since 2026-12-02T09:00:00Z (4m10s)",
			}, nil, "passive"},
		{"the count came back: the answer waits availableAfter", upRef, nil,
			[]client.Object{upState(0, func(w *builders.StateWrapper) { w.AvailableAfter(time.Minute) }), sorryOn503(followsUp),
				slice(ns, "storefront-a", "storefront", []string{"10.0.0.1", "10.0.0.2"})},
			"503 EndpointsCounted",
			[]string{
				"Service shop/storefront: 2 ready endpoints, minReady 1 (unavailableAfter 10s, availableAfter 1m0s)",
				"The count is at or above minReady now: the answer turns 200 once it stays there for 1m0s (availableAfter); 503 since 2026-12-02T09:00:00Z (4m10s)",
			}, nil, "active"},
		{"no EndpointSlices to list: the Ready condition's count, and a note", upRef, refuseSlices,
			[]client.Object{upState(3, nil), sorryOn503(followsUp),
				slice(ns, "storefront-a", "storefront", nil, "10.0.0.1")},
			"200 EndpointsCounted",
			[]string{
				"Service shop/storefront: 3 ready endpoints when the answer last changed, minReady 1 (unavailableAfter 10s, availableAfter 30s)",
				"The count is at or above minReady: on its side since 2026-12-02T09:00:00Z (4m10s), when the answer turned 200",
			},
			[]string{`the ready count of Service shop/storefront is the one the state's Ready condition recorded when the answer turned 200, not counted now: counting it needs list on endpointslices.discovery.k8s.io in namespace "shop", which you lack`},
			"passive"},
		{"the Service does not exist", upRef, nil,
			[]client.Object{answeredService(builders.ServiceState(ns, "storefront-up", "storefront").Obj(), false, 0), sorryOn503(followsUp)},
			"- ServiceNotFound",
			[]string{
				"Service shop/storefront: does not exist, minReady 1 (unavailableAfter 10s, availableAfter 30s)",
				"No response since 2026-12-02T09:00:00Z (4m10s): the answer comes at once when the Service does",
			}, nil, "passive"},
		{"a cluster state counts the Service in spec.service.namespace", platformRef, nil,
			[]client.Object{platformUp(1), sorryOn503(followsPlatformUp),
				slice("platform", "storefront-a", "storefront", []string{"10.0.0.1", "10.0.0.2"}),
				// The followers' namespace has a Service of that name too.
				slice(ns, "storefront-a", "storefront", []string{"10.0.2.1"}, "10.0.2.2")},
			"200 EndpointsCounted",
			[]string{
				"Service platform/storefront: 2 ready endpoints, minReady 1 (unavailableAfter 10s, availableAfter 30s)",
				"The count is at or above minReady: on its side since 2026-12-02T09:00:00Z (4m10s), when the answer turned 200",
			}, nil, "passive"},
		{"a cluster state whose Service's namespace the user may not read", platformRef,
			func(r request) error {
				if r.namespace == "platform" {
					return forbidden(r)
				}
				return nil
			},
			[]client.Object{platformUp(2), sorryOn503(followsPlatformUp),
				slice("platform", "storefront-a", "storefront", nil, "10.0.0.1", "10.0.0.2")},
			"200 EndpointsCounted",
			[]string{
				"Service platform/storefront: 2 ready endpoints when the answer last changed, minReady 1 (unavailableAfter 10s, availableAfter 30s)",
				"The count is at or above minReady: on its side since 2026-12-02T09:00:00Z (4m10s), when the answer turned 200",
			},
			[]string{`the ready count of Service platform/storefront is the one the state's Ready condition recorded when the answer turned 200, not counted now: counting it needs list on endpointslices.discovery.k8s.io in namespace "platform", which you lack`},
			"passive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeCluster(t, tt.refused, tt.objs...)
			_, report, err := StatusOfStateAt(context.Background(), c, []target.Kind{target.Ingress{}}, ns, tt.ref, readAt)
			if err != nil {
				t.Fatal(err)
			}
			if got := dashIfEmpty(report.State.StatusCode) + " " + report.State.Reason; got != tt.state {
				t.Errorf("state %q, want %q", got, tt.state)
			}
			if diff := cmp.Diff(tt.lines, report.State.Service.Lines()); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.notes, report.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if len(report.Switches) != 1 || report.Switches[0].Mode != tt.web {
				t.Errorf("switches %+v, want web %s", report.Switches, tt.web)
			}
		})
	}
}

// TestStatusOfOtherStates: a state that follows no Service has no
// service in its report, and status lists no EndpointSlices for it.
func TestStatusOfOtherStates(t *testing.T) {
	c := fakeCluster(t, refuseSlices, fixedState("503", ""), switchFor("a", nil, ""))
	_, report, err := StatusOfStateAt(context.Background(), c, []target.Kind{target.Ingress{}}, ns, namespaced("flag"), readAt)
	if err != nil || report.State.Service != nil || report.Notes != nil || report.State.Service.Lines() != nil {
		t.Errorf("report %+v, %v; want no service and no note", report, err)
	}
}

// TestServiceReportJSON: the -o json shape of the Service.
func TestServiceReportJSON(t *testing.T) {
	c := fakeCluster(t, nil, upState(3, nil), slice(ns, "storefront-a", "storefront", nil, "10.0.0.1"))
	_, report, err := StatusOfStateAt(context.Background(), c, []target.Kind{target.Ingress{}}, ns, namespaced("storefront-up"), readAt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(report.State.Service)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"storefront","namespace":"shop","minReady":1,"unavailableAfter":"10s","availableAfter":"30s","exists":true,` +
		`"ready":0,"readyFrom":"EndpointSlices","side":"below","answer":"200","since":"2026-12-02T09:00:00Z","for":"4m10s",` +
		`"turns":"503","turnsAfter":"10s"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPreviewServiceState: preview --status 503 takes a service state as
// any other: its follower that goes active on 503 would change mode.
func TestPreviewServiceState(t *testing.T) {
	web := sorryOn503(followsUp)
	web.UID = "uid-web"
	c := fakeCluster(t, nil, upState(3, nil), web, liveIn(t, web, false),
		slice(ns, "storefront-a", "storefront", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}))
	would, report, err := PreviewOf(context.Background(), c, []target.Kind{target.Ingress{}}, ns, namespaced("storefront-up"), 1,
		func(s *v1beta1.DynamicIngressState) (*v1beta1.DynamicIngressState, error) {
			return WithAnswer(s, Answer{StatusCode: "503"}), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range report.Changes {
		got = append(got, ch.Kind+" "+ch.Name+" "+ch.From+"->"+ch.To+" "+ch.Action)
	}
	if diff := cmp.Diff([]string{"DynamicIngress web passive->active update"}, got); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
	if diff := report.Changes[0].Diff; !strings.Contains(diff, "-            name: storefront\n+            name: sorry\n") {
		t.Errorf("the diff does not send web to sorry:\n%s", diff)
	}
	if would.Status.StatusCode != "503" {
		t.Errorf("previewed answer %q, want 503", would.Status.StatusCode)
	}
}
