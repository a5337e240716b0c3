package switches

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/writes"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

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
					a := writes.NewAppliedTargets()
					a.Keep(key, writes.RenderedFromSwitch(sw, active), targetUID, before)
					got := a.Body(key, writes.RenderedFromSwitch(edited, active), targetUID)
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
