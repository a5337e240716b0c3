package switches

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/served"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/writes"
)

func TestApplyBody(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"namespace": "shop", "name": "web"},
		"spec":     map[string]any{"ingressClassName": "nginx"},
	}}
	body, err := applyBody(desired, "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"web","namespace":"shop","uid":"uid-1"},"spec":{"ingressClassName":"nginx"}}`
	if string(body) != want {
		t.Errorf("body:\n got %s\nwant %s", body, want)
	}
	if desired.GetUID() != "" {
		t.Errorf("applyBody set the UID on the rendered object (%q): the up-to-date comparison would see a field no one owns", desired.GetUID())
	}
}

func TestStatusMergePatch(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason,
			LastTransitionTime: metav1.Unix(1700000000, 0).Rfc3339Copy()}
	}
	passive := v1beta1.SwitchStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{
		cond(v1beta1.ConditionActive, metav1.ConditionFalse, v1beta1.ReasonNotMatched),
		cond(v1beta1.ConditionReady, metav1.ConditionTrue, v1beta1.ReasonSynced)}}
	active := *passive.DeepCopy()
	active.Conditions[0] = cond(v1beta1.ConditionActive, metav1.ConditionTrue, v1beta1.ReasonMatched)
	regenerated := *active.DeepCopy()
	regenerated.ObservedGeneration = 2

	for _, tc := range []struct {
		name          string
		before, after v1beta1.SwitchStatus
		want          string
	}{
		{"first status", v1beta1.SwitchStatus{}, passive,
			`{"status":{"conditions":[{"lastTransitionTime":"2023-11-14T22:13:20Z","message":"NotMatched","reason":"NotMatched","status":"False","type":"Active"},` +
				`{"lastTransitionTime":"2023-11-14T22:13:20Z","message":"Synced","reason":"Synced","status":"True","type":"Ready"}],"observedGeneration":1}}`},
		// Conditions are a list: a merge patch replaces it whole.
		{"a switch", passive, active,
			`{"status":{"conditions":[{"lastTransitionTime":"2023-11-14T22:13:20Z","message":"Matched","reason":"Matched","status":"True","type":"Active"},` +
				`{"lastTransitionTime":"2023-11-14T22:13:20Z","message":"Synced","reason":"Synced","status":"True","type":"Ready"}]}}`},
		{"only the generation", active, regenerated, `{"status":{"observedGeneration":2}}`},
		{"a condition and the generation removed", regenerated, v1beta1.SwitchStatus{Conditions: regenerated.Conditions[:1]},
			`{"status":{"conditions":[{"lastTransitionTime":"2023-11-14T22:13:20Z","message":"Matched","reason":"Matched","status":"True","type":"Active"}],"observedGeneration":null}}`},
	} {
		got, err := statusMergePatch(&tc.before, &tc.after)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		// The same as client.MergeFrom sends for the whole object.
		before := &v1beta1.DynamicIngress{Spec: v1beta1.DynamicIngressSpec{State: "checkout"}, Status: *tc.before.DeepCopy()}
		after := before.DeepCopy()
		after.Status = *tc.after.DeepCopy()
		whole, err := client.MergeFrom(before).Data(after)
		if err != nil {
			t.Fatal(err)
		}
		if string(whole) != string(got) {
			t.Errorf("%s: client.MergeFrom sends\n%s\nstatusMergePatch\n%s", tc.name, whole, got)
		}
		// Applied to an object holding before, the patch gives after
		// and leaves the rest of the object alone.
		var patched struct {
			Spec   map[string]any       `json:"spec"`
			Status v1beta1.SwitchStatus `json:"status"`
		}
		doc, _ := json.Marshal(map[string]any{"spec": map[string]any{"state": "checkout"}, "status": tc.before})
		merged, err := jsonpatch.MergePatch(doc, got)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := json.Unmarshal(merged, &patched); err != nil {
			t.Fatal(err)
		}
		if patched.Spec["state"] != "checkout" {
			t.Errorf("%s: the patch changed the spec: %v", tc.name, patched.Spec)
		}
		a, _ := json.Marshal(patched.Status)
		b, _ := json.Marshal(tc.after)
		if string(a) != string(b) {
			t.Errorf("%s: patched status\n got %s\nwant %s", tc.name, a, b)
		}
	}
}

func TestNextStatus(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason,
			LastTransitionTime: metav1.Unix(1700000000, 0).Rfc3339Copy()}
	}
	notMatched := cond(v1beta1.ConditionActive, metav1.ConditionFalse, v1beta1.ReasonNotMatched)
	matched := cond(v1beta1.ConditionActive, metav1.ConditionTrue, v1beta1.ReasonMatched)
	synced := cond(v1beta1.ConditionReady, metav1.ConditionTrue, v1beta1.ReasonSynced)
	otherMessage := notMatched
	otherMessage.Message = "the state answered 418"

	for _, tc := range []struct {
		name           string
		generation     int64
		active         metav1.Condition
		wantNil        bool
		wantActive     metav1.ConditionStatus
		wantMessage    string
		wantGeneration int64
	}{
		{"nothing changed", 1, notMatched, true, "", "", 0},
		{"a switch", 1, matched, false, metav1.ConditionTrue, v1beta1.ReasonMatched, 1},
		{"a new message only", 1, otherMessage, false, metav1.ConditionFalse, "the state answered 418", 1},
		{"a new generation only", 2, notMatched, false, metav1.ConditionFalse, v1beta1.ReasonNotMatched, 2},
	} {
		di := &v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation},
			Status: v1beta1.SwitchStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{notMatched, synced}}}
		before := di.Status.DeepCopy()
		got := nextStatus(di, tc.active, synced, nil, served.View{}, nil)
		if !equality.Semantic.DeepEqual(before, &di.Status) {
			t.Errorf("%s: nextStatus changed the switch's own status (the cache's object)", tc.name)
		}
		if tc.wantNil {
			if got != nil {
				t.Errorf("%s: nextStatus = %+v, want nil (nothing to write)", tc.name, got)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: nextStatus = nil, want a status to write", tc.name)
			continue
		}
		active := meta.FindStatusCondition(got.Conditions, v1beta1.ConditionActive)
		if active.Status != tc.wantActive || active.Message != tc.wantMessage || got.ObservedGeneration != tc.wantGeneration ||
			meta.FindStatusCondition(got.Conditions, v1beta1.ConditionReady) == nil {
			t.Errorf("%s: nextStatus = %+v, want Active %s %q at generation %d, Ready kept", tc.name, got, tc.wantActive, tc.wantMessage, tc.wantGeneration)
		}
	}
}

func TestNotAnEchoOfOurApply(t *testing.T) {
	r := &Reconciler{Kind: target.Ingress{}, applied: writes.NewAppliedTargets()}
	r.applied.Record(types.NamespacedName{Namespace: "shop", Name: "web"}, writes.RenderedFromSwitch(&v1beta1.DynamicIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web", Generation: 1}}, true), "12")
	ingress := func(rv string, owner *metav1.OwnerReference) *networkingv1.Ingress {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-ingress", ResourceVersion: rv}}
		if owner != nil {
			ing.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return ing
	}
	ours := &metav1.OwnerReference{APIVersion: v1beta1.GroupVersion.String(), Kind: "DynamicIngress", Name: "web", UID: "uid-web", Controller: ptr.To(true)}
	otherSwitch := &metav1.OwnerReference{APIVersion: v1beta1.GroupVersion.String(), Kind: "DynamicIngress", Name: "api", UID: "uid-api", Controller: ptr.To(true)}
	notController := &metav1.OwnerReference{APIVersion: v1beta1.GroupVersion.String(), Kind: "DynamicIngress", Name: "web", UID: "uid-web"}
	otherKind := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr.To(true)}

	for _, tc := range []struct {
		name string
		obj  *networkingv1.Ingress
		want bool
	}{
		{"the echo of our last apply", ingress("12", ours), false},
		{"someone else's write after it", ingress("13", ours), true},
		{"an older version", ingress("11", ours), true},
		{"the target of a switch never applied", ingress("12", otherSwitch), true},
		{"not controlled by a switch", ingress("12", notController), true},
		{"controlled by something else", ingress("12", otherKind), true},
		{"no owner", ingress("12", nil), true},
	} {
		got := r.notAnEchoOfOurApply().Update(event.UpdateEvent{ObjectOld: ingress("10", ours), ObjectNew: tc.obj})
		if got != tc.want {
			t.Errorf("%s: passes = %v, want %v", tc.name, got, tc.want)
		}
	}
	for name, e := range map[string]bool{
		"create": r.notAnEchoOfOurApply().Create(event.CreateEvent{Object: ingress("12", ours)}),
		"delete": r.notAnEchoOfOurApply().Delete(event.DeleteEvent{Object: ingress("12", ours)}),
	} {
		if !e {
			t.Errorf("a %s of our target does not pass", name)
		}
	}
}
