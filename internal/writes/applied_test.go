package writes

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestAppliedTargets(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	passive := RenderedFrom{uid: "uid-web", generation: 3, active: false}
	active := RenderedFrom{uid: "uid-web", generation: 3, active: true}
	edited := RenderedFrom{uid: "uid-web", generation: 4, active: false}
	recreated := RenderedFrom{uid: "uid-web-2", generation: 3, active: false}

	a := NewAppliedTargets()
	a.Record(web, passive, "10")
	a.Record(api, passive, "") // no version: nothing to remember

	for _, tc := range []struct {
		name     string
		key      types.NamespacedName
		rv       string
		rendered RenderedFrom
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
		if got := a.Holds(tc.key, tc.rv, tc.rendered); got != tc.want {
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
		if diff := cmp.Diff(tc.want, a.ModeAt(tc.key, tc.rv, RenderedFrom{uid: tc.uid, generation: tc.generation, inputs: tc.inputs})); diff != "" {
			t.Errorf("%s: modeAt (-want +got):\n%s", tc.name, diff)
		}
	}

	a.Record(web, active, "12")
	if a.Holds(web, "10", passive) || !a.Holds(web, "12", active) {
		t.Error("a later apply did not replace the record")
	}
	if diff := cmp.Diff(ptr.To(true), a.ModeAt(web, "12", passive)); diff != "" {
		t.Errorf("modeAt after the active apply (-want +got):\n%s", diff)
	}
	a.Forget(web)
	if a.Holds(web, "12", active) {
		t.Error("a forgotten switch still holds")
	}
}

func TestAppliedTargetsKeptBodies(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	passive := RenderedFrom{uid: "uid-web", generation: 3, active: false}
	active := RenderedFrom{uid: "uid-web", generation: 3, active: true}

	blog := types.NamespacedName{Namespace: "shop", Name: "blog"}
	a := NewAppliedTargets()
	a.Keep(web, passive, "uid-ing", []byte("passive body"))
	a.Keep(web, active, "uid-ing", []byte("active body"))
	// A body kept without the target's UID never matches: it carries no
	// precondition against a target deleted and created again.
	a.Keep(blog, active, "", []byte("body without a UID"))

	for _, tc := range []struct {
		name      string
		key       types.NamespacedName
		rendered  RenderedFrom
		targetUID types.UID
		want      string
	}{
		{"the passive body, same templates and target", web, passive, "uid-ing", "passive body"},
		{"the active body beside it", web, active, "uid-ing", "active body"},
		{"templates edited since", web, RenderedFrom{uid: "uid-web", generation: 4, active: true}, "uid-ing", ""},
		{"a switch of the same name created again", web, RenderedFrom{uid: "uid-web-2", generation: 3, active: true}, "uid-ing", ""},
		{"a target of the same name created again", web, active, "uid-ing-2", ""},
		{"rendered from other inputs", web, RenderedFrom{uid: "uid-web", generation: 3, active: true, inputs: renderInputs{namespace: "shop", name: "other"}}, "uid-ing", ""},
		{"no target UID to compare", web, active, "", ""},
		{"a switch never applied", api, active, "uid-ing", ""},
		{"kept and asked for without a target UID", blog, active, "", ""},
	} {
		if got := string(a.Body(tc.key, tc.rendered, tc.targetUID)); got != tc.want {
			t.Errorf("%s: body = %q, want %q", tc.name, got, tc.want)
		}
	}

	edited := RenderedFrom{uid: "uid-web", generation: 4, active: true}
	a.Keep(web, edited, "uid-ing", []byte("edited active body"))
	if got := a.Body(web, active, "uid-ing"); got != nil {
		t.Errorf("the body before the edit is still kept: %q", got)
	}
	if got := string(a.Body(web, passive, "uid-ing")); got != "passive body" {
		t.Errorf("keeping the active body replaced the passive one: %q", got)
	}

	// A body over the cap is not kept, and the one it replaces goes too;
	// one of exactly the cap is kept.
	editedPassive := RenderedFrom{uid: "uid-web", generation: 4, active: false}
	a.Keep(web, editedPassive, "uid-ing", bytes.Repeat([]byte("x"), maxKeptBodyBytes+1))
	if got := a.Body(web, editedPassive, "uid-ing"); got != nil {
		t.Errorf("a body of %d bytes is kept, over the cap of %d", len(got), maxKeptBodyBytes)
	}
	if got := a.Body(web, passive, "uid-ing"); got != nil {
		t.Errorf("the passive body of the generation before is still kept: %q", got)
	}
	a.Keep(web, editedPassive, "uid-ing", bytes.Repeat([]byte("x"), maxKeptBodyBytes))
	if got := a.Body(web, editedPassive, "uid-ing"); len(got) != maxKeptBodyBytes {
		t.Errorf("a body of exactly the cap is not kept (got %d bytes)", len(got))
	}
	a.Keep(blog, active, "uid-ing", bytes.Repeat([]byte("x"), maxKeptBodyBytes+1))
	if _, ok := a.bodies[blog]; ok {
		t.Error("a switch whose only body went over the cap still has an entry")
	}

	a.Forget(web)
	if got := a.Body(web, edited, "uid-ing"); got != nil {
		t.Errorf("a forgotten switch still has a body: %q", got)
	}
}
