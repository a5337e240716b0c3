package controller

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
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
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/served"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func TestAppliedTargets(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	passive := renderedFrom{uid: "uid-web", generation: 3, active: false}
	active := renderedFrom{uid: "uid-web", generation: 3, active: true}
	edited := renderedFrom{uid: "uid-web", generation: 4, active: false}
	recreated := renderedFrom{uid: "uid-web-2", generation: 3, active: false}

	a := newAppliedTargets()
	a.record(web, passive, "10")
	a.record(api, passive, "") // no version: nothing to remember

	for _, tc := range []struct {
		name     string
		key      types.NamespacedName
		rv       string
		rendered renderedFrom
		want     bool
	}{
		{"the target as our apply left it", web, "10", passive, true},
		{"written since (a hand edit, another manager)", web, "11", passive, false},
		{"an older copy", web, "9", passive, false},
		{"the other mode to apply", web, "10", active, false},
		{"templates edited since", web, "10", edited, false},
		{"a switch of the same name created again", web, "10", recreated, false},
		{"a switch never applied", api, "10", passive, false},
		{"no version to compare", web, "", passive, false},
	} {
		if got := a.holds(tc.key, tc.rv, tc.rendered); got != tc.want {
			t.Errorf("%s: holds = %v, want %v", tc.name, got, tc.want)
		}
	}

	for _, tc := range []struct {
		name       string
		key        types.NamespacedName
		rv         string
		uid        types.UID
		generation int64
		inputs     renderInputs
		want       *bool
	}{
		{"the target as our passive apply left it, same templates", web, "10", "uid-web", 3, renderInputs{}, ptr.To(false)},
		{"written since: its shape decides", web, "11", "uid-web", 3, renderInputs{}, nil},
		{"templates edited since: its shape decides", web, "10", "uid-web", 4, renderInputs{}, nil},
		{"a switch of the same name created again", web, "10", "uid-web-2", 3, renderInputs{}, nil},
		{"rendered from other inputs", web, "10", "uid-web", 3, renderInputs{namespace: "shop", name: "other"}, nil},
		{"a switch never applied", api, "10", "uid-web", 3, renderInputs{}, nil},
		{"no version to compare", web, "", "uid-web", 3, renderInputs{}, nil},
	} {
		if diff := cmp.Diff(tc.want, a.modeAt(tc.key, tc.rv, renderedFrom{uid: tc.uid, generation: tc.generation, inputs: tc.inputs})); diff != "" {
			t.Errorf("%s: modeAt (-want +got):\n%s", tc.name, diff)
		}
	}

	a.record(web, active, "12")
	if a.holds(web, "10", passive) || !a.holds(web, "12", active) {
		t.Error("a later apply did not replace the record")
	}
	if diff := cmp.Diff(ptr.To(true), a.modeAt(web, "12", passive)); diff != "" {
		t.Errorf("modeAt after the active apply (-want +got):\n%s", diff)
	}
	a.forget(web)
	if a.holds(web, "12", active) {
		t.Error("a forgotten switch still holds")
	}
}

func TestAppliedTargetsKeptBodies(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	passive := renderedFrom{uid: "uid-web", generation: 3, active: false}
	active := renderedFrom{uid: "uid-web", generation: 3, active: true}

	blog := types.NamespacedName{Namespace: "shop", Name: "blog"}
	a := newAppliedTargets()
	a.keep(web, passive, "uid-ing", []byte("passive body"))
	a.keep(web, active, "uid-ing", []byte("active body"))
	// A body kept without the target's UID never matches: it carries no
	// precondition against a target deleted and created again.
	a.keep(blog, active, "", []byte("body without a UID"))

	for _, tc := range []struct {
		name      string
		key       types.NamespacedName
		rendered  renderedFrom
		targetUID types.UID
		want      string
	}{
		{"the passive body, same templates and target", web, passive, "uid-ing", "passive body"},
		{"the active body beside it", web, active, "uid-ing", "active body"},
		{"templates edited since", web, renderedFrom{uid: "uid-web", generation: 4, active: true}, "uid-ing", ""},
		{"a switch of the same name created again", web, renderedFrom{uid: "uid-web-2", generation: 3, active: true}, "uid-ing", ""},
		{"a target of the same name created again", web, active, "uid-ing-2", ""},
		{"rendered from other inputs", web, renderedFrom{uid: "uid-web", generation: 3, active: true, inputs: renderInputs{namespace: "shop", name: "other"}}, "uid-ing", ""},
		{"no target UID to compare", web, active, "", ""},
		{"a switch never applied", api, active, "uid-ing", ""},
		{"kept and asked for without a target UID", blog, active, "", ""},
	} {
		if got := string(a.body(tc.key, tc.rendered, tc.targetUID)); got != tc.want {
			t.Errorf("%s: body = %q, want %q", tc.name, got, tc.want)
		}
	}

	edited := renderedFrom{uid: "uid-web", generation: 4, active: true}
	a.keep(web, edited, "uid-ing", []byte("edited active body"))
	if got := a.body(web, active, "uid-ing"); got != nil {
		t.Errorf("the body before the edit is still kept: %q", got)
	}
	if got := string(a.body(web, passive, "uid-ing")); got != "passive body" {
		t.Errorf("keeping the active body replaced the passive one: %q", got)
	}

	// A body over the cap is not kept, and the one it replaces goes too;
	// one of exactly the cap is kept.
	editedPassive := renderedFrom{uid: "uid-web", generation: 4, active: false}
	a.keep(web, editedPassive, "uid-ing", bytes.Repeat([]byte("x"), maxKeptBodyBytes+1))
	if got := a.body(web, editedPassive, "uid-ing"); got != nil {
		t.Errorf("a body of %d bytes is kept, over the cap of %d", len(got), maxKeptBodyBytes)
	}
	if got := a.body(web, passive, "uid-ing"); got != nil {
		t.Errorf("the passive body of the generation before is still kept: %q", got)
	}
	a.keep(web, editedPassive, "uid-ing", bytes.Repeat([]byte("x"), maxKeptBodyBytes))
	if got := a.body(web, editedPassive, "uid-ing"); len(got) != maxKeptBodyBytes {
		t.Errorf("a body of exactly the cap is not kept (got %d bytes)", len(got))
	}
	a.keep(blog, active, "uid-ing", bytes.Repeat([]byte("x"), maxKeptBodyBytes+1))
	if _, ok := a.bodies[blog]; ok {
		t.Error("a switch whose only body went over the cap still has an entry")
	}

	a.forget(web)
	if got := a.body(web, edited, "uid-ing"); got != nil {
		t.Errorf("a forgotten switch still has a body: %q", got)
	}
}

// TestKeptBodiesFollowEveryRenderInput edits each field of a switch's
// metadata in turn (every field of its TypeMeta and ObjectMeta, found by
// reflection, so that a field Kubernetes adds is edited too), none of
// which moves the generation, and checks that a body kept for the switch
// before the edit is handed out after it only when it is what a fresh
// render gives: either the edit does not reach the target, or what the
// body is matched against (renderedFrom) tells the switch apart. An edit
// that does not reach the target (labels, annotations, finalizers...)
// leaves the kept body in use.
func TestKeptBodiesFollowEveryRenderInput(t *testing.T) {
	ingress := builders.DynamicIngress("shop", "storefront").State("flag").ExpectCode("200").
		Passive(builders.IngressTo("storefront.example.com", "web").Annotation("team", "payments")).
		Active(builders.IngressTo("storefront.example.com", "sorry")).Obj()
	route := builders.DynamicHTTPRoute("shop", "storefront").State("flag").ExpectCode("200").
		Passive(builders.RouteTo("storefront.example.com", "web")).
		Active(builders.RouteTo("storefront.example.com", "sorry")).Obj()
	const targetUID = "uid-target"
	for _, k := range []struct {
		kind target.Kind
		sw   target.Switch
	}{{target.Ingress{}, ingress}, {target.HTTPRoute{}, route}} {
		sw := k.sw
		sw.SetUID("uid-switch")
		sw.SetGeneration(3)
		sw.SetResourceVersion("41")
		sw.SetLabels(map[string]string{"app": "storefront"})
		sw.SetAnnotations(map[string]string{"owner": "shop-team"})
		key := client.ObjectKeyFromObject(sw)
		for _, part := range []string{"TypeMeta", "ObjectMeta"} {
			fields := reflect.ValueOf(sw).Elem().FieldByName(part).Type()
			for i := range fields.NumField() {
				field := part + "." + fields.Field(i).Name
				edited := sw.DeepCopyObject().(target.Switch)
				if !editValue(reflect.ValueOf(edited).Elem().FieldByName(part).Field(i)) || equality.Semantic.DeepEqual(sw, edited) {
					t.Fatalf("%s: the test cannot edit %s (%s): teach editValue its type", k.kind.SwitchKind(), field, fields.Field(i).Type)
				}
				for _, active := range []bool{false, true} {
					before := renderedBody(t, k.kind, sw, active, targetUID)
					after := renderedBody(t, k.kind, edited, active, targetUID)
					a := newAppliedTargets()
					a.keep(key, renderedFromSwitch(sw, active), targetUID, before)
					got := a.body(key, renderedFromSwitch(edited, active), targetUID)
					switch {
					case got != nil && !bytes.Equal(got, after):
						t.Errorf("%s, %s mode, %s edited: the kept body is applied where a fresh render gives another:\nkept  %s\nfresh %s",
							k.kind.SwitchKind(), decision.ModeName(active), field, got, after)
					case got == nil && bytes.Equal(before, after) && field != "ObjectMeta.Generation":
						// A new generation is a new spec, even one that
						// renders the same: that edit may drop the body.
						t.Errorf("%s, %s mode, %s edited: the edit does not reach the target, yet the kept body is dropped",
							k.kind.SwitchKind(), decision.ModeName(active), field)
					}
				}
			}
		}
	}
}

// renderedBody is the apply body of the switch's template of a mode for
// the target whose UID is targetUID.
func renderedBody(t *testing.T, kind target.Kind, sw target.Switch, active bool, targetUID types.UID) []byte {
	t.Helper()
	desired, err := target.Render(kind, sw, active)
	if err != nil {
		t.Fatal(err)
	}
	body, err := applyBody(desired, targetUID)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// editValue changes v, a settable field, to another value of its type: a
// string gets a suffix, a number goes up, a map and a slice get one more
// element, a nil pointer points at a value, a time moves on. It reports
// false when it knows no edit of v's type.
func editValue(v reflect.Value) bool {
	if t, ok := v.Interface().(metav1.Time); ok {
		v.Set(reflect.ValueOf(metav1.NewTime(t.Add(time.Hour))))
		return true
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "-edited")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint8:
		v.SetUint(v.Uint() + 1)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		editValue(v.Elem())
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, v.MapIndex(k))
		}
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		editValue(k)
		editValue(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		editValue(e)
		v.Set(reflect.Append(v, e))
	case reflect.Struct:
		edited := false
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && editValue(v.Field(i)) {
				edited = true
			}
		}
		return edited
	default:
		return false
	}
	return true
}

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
		got := nextStatus(di, tc.active, synced, nil, served.View{})
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
	r := &SwitchReconciler{Kind: target.Ingress{}, applied: newAppliedTargets()}
	r.applied.record(types.NamespacedName{Namespace: "shop", Name: "web"}, renderedFrom{uid: "uid-web", generation: 1, active: true}, "12")
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
