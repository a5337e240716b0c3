package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

const ns = "shop"

// switchFor is a DynamicIngress of the state "flag", active on 503 unless
// change says otherwise, with an Active condition of status when it is set.
func switchFor(name string, change func(*builders.DynamicIngressWrapper), status metav1.ConditionStatus) *v1beta1.DynamicIngress {
	w := builders.DynamicIngress(ns, name).State("flag").ExpectCode("503").
		Passive(builders.IngressTo("shop.example.com", "web")).
		Active(builders.IngressTo("shop.example.com", "sorry"))
	if change != nil {
		change(w)
	}
	sw := w.Obj()
	sw.UID = types.UID("uid-" + sw.Name)
	if status != "" {
		sw.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionActive, Status: status, Reason: "Matched"}}
	}
	return sw
}

// liveIn is the Ingress the operator renders for sw in a mode.
func liveIn(t *testing.T, sw target.Switch, active bool) client.Object {
	t.Helper()
	u, err := target.Render(target.Ingress{}, sw, active)
	if err != nil || u == nil {
		t.Fatalf("rendering: %v", err)
	}
	ing := &networkingv1.Ingress{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ing); err != nil {
		t.Fatal(err)
	}
	return ing
}

func fixedState(code, body string) *v1beta1.DynamicIngressState {
	s := builders.FixedState(ns, "flag", code, body).Obj()
	s.Status.StatusCode, s.Status.Body = code, body
	return s
}

// TestChanges runs the preview's decision over every failure policy,
// override and matching mode: from is what the state decides now, to what
// the answer would make the operator decide.
func TestChanges(t *testing.T) {
	fp := func(p v1beta1.FailurePolicy) func(*builders.DynamicIngressWrapper) {
		return func(w *builders.DynamicIngressWrapper) { w.FailurePolicy(p) }
	}
	override := func(m v1beta1.Mode) func(*builders.DynamicIngressWrapper) {
		return func(w *builders.DynamicIngressWrapper) { w.Override(m) }
	}
	tests := []struct {
		name   string
		sw     *v1beta1.DynamicIngress
		live   *bool // the mode of the live target, nil for none
		state  *v1beta1.DynamicIngressState
		answer Answer
		// want is "from->to", "" when the mode would not change.
		want string
	}{
		{"exact code: passive to active", switchFor("a", nil, "False"), ptr.To(false), fixedState("200", ""), Answer{StatusCode: "503"}, "passive->active"},
		{"exact code: active to passive", switchFor("a", nil, "True"), ptr.To(true), fixedState("503", ""), Answer{StatusCode: "200"}, "active->passive"},
		{"exact code: the same answer changes nothing", switchFor("a", nil, "False"), ptr.To(false), fixedState("200", ""), Answer{StatusCode: "200"}, ""},
		{"exact body", switchFor("a", func(w *builders.DynamicIngressWrapper) { w.ExpectCode("200").ExpectBody(`{"on":true}`) }, "False"), ptr.To(false),
			fixedState("200", `{"on":false}`), Answer{StatusCode: "200", Body: `{ "on": true }`}, "passive->active"},
		{"Contains", switchFor("a", func(w *builders.DynamicIngressWrapper) {
			w.ExpectCode("200").ExpectBody(`{"maintenance":true}`).BodyMatch(v1beta1.BodyMatchContains)
		}, "False"), ptr.To(false), fixedState("200", `{"maintenance":false}`), Answer{StatusCode: "200", Body: `{"maintenance":true,"by":"ops"}`}, "passive->active"},
		{"expression", switchFor("a", func(w *builders.DynamicIngressWrapper) {
			w.ExpectCode("").Expression("response.json.ratio > 0.05")
		}, "False"), ptr.To(false), fixedState("200", `{"ratio":0.01}`), Answer{StatusCode: "200", Body: `{"ratio":0.2}`}, "passive->active"},
		{"expression that fails to evaluate selects passive", switchFor("a", func(w *builders.DynamicIngressWrapper) {
			w.ExpectCode("").Expression("response.json.ratio > 0.05")
		}, "True"), ptr.To(true), fixedState("200", `{"ratio":0.2}`), Answer{StatusCode: "200", Body: `not json`}, "active->passive"},

		{"override Active: no answer changes it", switchFor("a", override(v1beta1.ModeActive), "True"), ptr.To(true), fixedState("503", ""), Answer{StatusCode: "200"}, ""},
		{"override Passive: no answer changes it", switchFor("a", override(v1beta1.ModePassive), "False"), ptr.To(false), fixedState("200", ""), Answer{StatusCode: "503"}, ""},

		// A state that has no answer now: the failure policy decides from.
		{"policy Passive from no answer", switchFor("a", fp(v1beta1.FailurePolicyPassive), "False"), ptr.To(false), fixedState("", ""), Answer{StatusCode: "503"}, "passive->active"},
		{"policy Active from no answer", switchFor("a", fp(v1beta1.FailurePolicyActive), "True"), ptr.To(true), fixedState("", ""), Answer{StatusCode: "200"}, "active->passive"},
		{"policy Retain keeps the target's active mode", switchFor("a", fp(v1beta1.FailurePolicyRetain), "False"), ptr.To(true), fixedState("", ""), Answer{StatusCode: "200"}, "active->passive"},
		{"policy Retain keeps the target's passive mode", switchFor("a", fp(v1beta1.FailurePolicyRetain), "True"), ptr.To(false), fixedState("", ""), Answer{StatusCode: "503"}, "passive->active"},
		{"policy Retain with the answer it keeps", switchFor("a", fp(v1beta1.FailurePolicyRetain), "True"), ptr.To(true), fixedState("", ""), Answer{StatusCode: "503"}, ""},
		{"policy Retain without a target or status starts passive", switchFor("a", fp(v1beta1.FailurePolicyRetain), ""), nil, fixedState("", ""), Answer{StatusCode: "503"}, "passive->active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			item := Item{Kind: target.Ingress{}, Switch: tt.sw}
			if tt.live != nil {
				item.Live = liveIn(t, tt.sw, *tt.live)
			}
			snap := &Snapshot{State: tt.state, Items: []Item{item}}
			got := ""
			for _, ch := range Changes(snap, WithAnswer(tt.state, tt.answer)) {
				got = ch.From + "->" + ch.To
				if ch.Kind != "DynamicIngress" || ch.Name != "a" || ch.Target != "shop/a" {
					t.Errorf("change names %s %q target %s", ch.Kind, ch.Name, ch.Target)
				}
			}
			if got != tt.want {
				t.Errorf("change %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScheduledAt(t *testing.T) {
	state := builders.ScheduleState(ns, "weekly").TimeZone("UTC").OneOff("2026-12-24T00:00:00Z", "2026-12-26T00:00:00Z").Obj()
	sw := switchFor("a", func(w *builders.DynamicIngressWrapper) {
		w.ExpectCode("200").ExpectBody(`{"open":true}`)
	}, "False")
	snap := &Snapshot{State: state, Items: []Item{{Kind: target.Ingress{}, Switch: sw}}}
	for at, want := range map[string]int{"2026-12-25T12:00:00Z": 1, "2026-12-27T00:00:00Z": 0} {
		tm, _ := time.Parse(time.RFC3339, at)
		would, err := ScheduledAt(state, tm)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(Changes(snap, would)); got != want {
			t.Errorf("at %s: %d changes, want %d", at, got, want)
		}
	}
	if _, err := ScheduledAt(fixedState("200", ""), time.Now()); err == nil ||
		err.Error() != `--at is for a schedule state; state "flag" in namespace "shop" has no spec.schedule` {
		t.Errorf("--at on a fixed state: %v", err)
	}
}

func TestInShapeRefuses(t *testing.T) {
	sw := switchFor("a", nil, "False")
	other := liveIn(t, sw, false)
	other.SetOwnerReferences(nil)
	elsewhere := switchFor("b", func(w *builders.DynamicIngressWrapper) { w.Obj().Spec.Target.Namespace = "other" }, "")
	nullActive := switchFor("c", func(w *builders.DynamicIngressWrapper) { w.Obj().Spec.ActiveIngress = nil }, "")
	tests := []struct {
		name   string
		sw     target.Switch
		active bool
		live   client.Object
		want   bool
	}{
		{"no target where the mode has one", sw, false, nil, false},
		{"the other mode's shape", sw, true, liveIn(t, sw, false), false},
		{"a target it does not control", sw, false, other, false},
		{"a target in another namespace", elsewhere, false, nil, false},
		{"no target where the mode has none", nullActive, true, nil, true},
		{"a target where the mode has none", nullActive, true, liveIn(t, nullActive, false), false},
		{"without the operator's fields, the right spec is not enough", sw, false, liveIn(t, sw, false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InShape(target.Ingress{}, tt.sw, tt.active, tt.live)
			if err != nil || got != tt.want {
				t.Errorf("InShape = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestAccepted(t *testing.T) {
	route := func(gen int64, conds ...metav1.Condition) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		for _, c := range conds {
			r.Status.Parents = append(r.Status.Parents, gatewayv1.RouteParentStatus{Conditions: []metav1.Condition{c}})
		}
		return r
	}
	acc := func(status metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: "Accepted", Status: status, ObservedGeneration: gen}
	}
	tests := []struct {
		name string
		live client.Object
		want string
	}{
		{"no route", nil, "unknown"},
		{"no parent reported", route(2), "unknown"},
		{"every parent accepted this generation", route(2, acc("True", 2), acc("True", 2)), "true"},
		{"one parent accepted an older generation", route(2, acc("True", 2), acc("True", 1)), "false"},
		{"one parent refused", route(2, acc("True", 2), acc("False", 2)), "false"},
		{"a parent without Accepted", route(2, metav1.Condition{Type: "ResolvedRefs", Status: "True", ObservedGeneration: 2}), "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := accepted(tt.live); got != tt.want {
				t.Errorf("accepted = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOutOfShape(t *testing.T) {
	state := fixedState("503", "")
	state.Generation, state.Status.ObservedGeneration = 3, 3
	report := Report{Switches: []SwitchReport{
		{Kind: "DynamicIngress", Name: "done", Target: "shop/done", Mode: "active", InShape: true, Synced: true},
		{Kind: "DynamicIngress", Name: "taken", Target: "shop/taken", Mode: "active", Reason: "TargetConflict", Message: "Ingress shop/taken exists and is not controlled by this DynamicIngress; it is left untouched"},
		{Kind: "DynamicHTTPRoute", Name: "route", Target: "shop/route", Mode: "active", InShape: true, Synced: true, Accepted: "unknown"},
	}}
	want := []string{`DynamicIngress "taken": its target shop/taken is not in active shape; its status is not synced (TargetConflict: Ingress shop/taken exists and is not controlled by this DynamicIngress; it is left untouched)`}
	if diff := cmp.Diff(want, OutOfShape(&Snapshot{State: state}, report, time.Now(), WaitFor{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	want = append(want, `DynamicHTTPRoute "route": HTTPRoute shop/route accepted: unknown`)
	if diff := cmp.Diff(want, OutOfShape(&Snapshot{State: state}, report, time.Now(), WaitFor{Accepted: true})); diff != "" {
		t.Errorf("with accepted (-want +got):\n%s", diff)
	}
	// A state whose status lags behind its spec is not done, even when its
	// switches follow the old answer.
	state.Generation = 4
	got := OutOfShape(&Snapshot{State: state}, Report{}, time.Now(), WaitFor{})
	if diff := cmp.Diff([]string{`state "flag": its status shows generation 3, not 4 yet`}, got); diff != "" {
		t.Errorf("lagging state (-want +got):\n%s", diff)
	}
}

func TestTimeoutError(t *testing.T) {
	err := &TimeoutError{State: "flag", Timeout: time.Minute, Pending: []string{"a", "b", "c", "d", "e", "f", "g"}}
	want := `timed out after 1m0s waiting for state "flag": 7 not in shape: a; b; c; d; e; and 2 more`
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
}

func TestKindOfAndParseMode(t *testing.T) {
	kinds := []target.Kind{target.Ingress{}, target.HTTPRoute{}}
	for in, want := range map[string]string{"di": "DynamicIngress", "dynamicingress": "DynamicIngress", "DynamicIngresses": "DynamicIngress",
		"dynamicingress.ingress.dynamicingress.io": "DynamicIngress", "dhr": "DynamicHTTPRoute", "dynamichttproutes": "DynamicHTTPRoute"} {
		kind, err := KindOf(kinds, in)
		if err != nil || kind.SwitchKind() != want {
			t.Errorf("KindOf(%q) = %v, %v; want %s", in, kind, err, want)
		}
	}
	if _, err := KindOf(kinds, "ingress"); err == nil || err.Error() != `"ingress" is not a switch kind: use dynamicingress (di) or dynamichttproute (dhr)` {
		t.Errorf("KindOf(ingress): %v", err)
	}
	for in, want := range map[string]v1beta1.Mode{"active": "Active", "passive": "Passive", "none": ""} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseMode("Active"); err == nil || err.Error() != `mode "Active": use active, passive or none` {
		t.Errorf("ParseMode(Active): %v", err)
	}
}

func TestUnifiedDiff(t *testing.T) {
	created, err := unifiedDiff("shop/a", "", "kind: Ingress\n")
	if err != nil || !strings.HasPrefix(created, "--- /dev/null\n+++ dry-run/shop/a\n") || !strings.Contains(created, "+kind: Ingress") {
		t.Errorf("creation diff:\n%s", created)
	}
	deleted, err := unifiedDiff("shop/a", "kind: Ingress\n", "")
	if err != nil || !strings.HasPrefix(deleted, "--- live/shop/a\n+++ /dev/null\n") || !strings.Contains(deleted, "-kind: Ingress") {
		t.Errorf("deletion diff:\n%s", deleted)
	}
}

func TestSummary(t *testing.T) {
	for s, want := range map[Summary]string{
		{Total: 500, Active: 500}:             "500 switches: 500 active, 0 passive, 0 not yet in shape",
		{Total: 1, Passive: 1, NotInShape: 1}: "1 switch: 0 active, 1 passive, 1 not yet in shape",
		{Total: 2, Active: 2, NotAdmitted: 1}: "2 switches: 2 active, 0 passive, 0 not yet in shape; 1 follower not admitted by the grant",
		{Total: 0, NotAdmitted: 3}:            "0 switches: 0 active, 0 passive, 0 not yet in shape; 3 followers not admitted by the grant",
	} {
		if got := s.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
