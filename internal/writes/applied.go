package writes

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// maxKeptBodyBytes is the largest apply body kept for a flip back. A usual
// target's body is well under 2 KiB (a one-host Ingress is about 700
// bytes), so every usual switch keeps its bodies; a larger one (dozens of
// hosts, long annotations) is rendered afresh at each flip, which costs
// CPU in proportion to its size and nothing else. The cap bounds what kept
// bodies can cost: at most two per switch, 16 KiB, so about 156 MiB at
// 10 000 switches in the worst case, within the headroom of the default
// memory limit (docs/install.md, "Sizing").
const maxKeptBodyBytes = 8 << 10

// AppliedTargets remembers, for each switch whose target this manager
// applied, the resourceVersion the API server gave the target, and what the
// apply body was rendered from (renderedFrom). A target still at that
// resourceVersion is exactly what that apply made it: the operator's field
// owner owns precisely the fields of that body (an apply with force takes
// every field it names and gives up every field it leaves out). So a
// reconcile that would render the same body finds the target up to date
// without rendering anything or decoding the target's managedFields
// (docs/architecture.md, "Knowing a target is up to date").
//
// It is only a shortcut: any other resourceVersion (someone else wrote the
// target, or the manager restarted with an empty record) falls back to the
// full comparison.
//
// It also keeps, per switch and mode, the body of the last apply in that
// mode (keptBody) when it is at most maxKeptBodyBytes: a flip back to a
// mode applies that body again, as long as it was rendered from what the
// switch would render it from now and for the target's UID, without
// rendering the template or encoding the body again.
type AppliedTargets struct {
	mu      sync.Mutex
	applied map[types.NamespacedName]appliedTarget
	// bodies are the kept bodies of each switch, by mode: [0] passive,
	// [1] active.
	bodies map[types.NamespacedName]*[2]keptBody
}

// keptBody is an apply body, what it was rendered from, and the UID of the
// target it was applied to (the body carries it as a precondition).
type keptBody struct {
	rendered  RenderedFrom
	targetUID types.UID
	body      []byte
}

// appliedTarget is one switch's last apply: what it was rendered from and
// the resourceVersion it left the target at.
type appliedTarget struct {
	rendered        RenderedFrom
	resourceVersion string
}

// RenderedFrom is everything a rendered body depends on besides the
// target's UID (which keptBody holds): the switch's UID and generation,
// which fix its spec (any change of the spec, templates and target name
// included, moves the generation), the mode, and inputs, what rendering
// reads of the switch outside its spec.
type RenderedFrom struct {
	uid        types.UID
	generation int64
	active     bool
	inputs     renderInputs
}

// renderInputs are the values target.Render takes from the switch outside
// its spec and UID, exactly: its name (the ownerReference's) and its
// namespace (the target's, when spec.target names none). Nothing else of
// the switch's metadata reaches the body: its labels, annotations,
// finalizers, ownerReferences and resourceVersion change without moving
// the generation, and leave a kept body valid
// (TestKeptBodiesFollowEveryRenderInput edits each field of the
// metadata in turn). What else the body holds is fixed for the manager's
// life: the API's group and version and the switch kind in the
// ownerReference (the record belongs to one kind's engine), and the
// managed-by label. The field owner is not in the body: it is a parameter
// of the apply.
type renderInputs struct {
	namespace, name string
}

// Active is whether the body rendered is of the active mode.
func (r RenderedFrom) Active() bool { return r.active }

// RenderedFromSwitch is what the switch renders the body of a mode from
// now.
func RenderedFromSwitch(sw target.Switch, active bool) RenderedFrom {
	return RenderedFrom{uid: sw.GetUID(), generation: sw.GetGeneration(), active: active,
		inputs: renderInputs{namespace: sw.GetNamespace(), name: sw.GetName()}}
}

// NewAppliedTargets returns an empty record of applied targets.
func NewAppliedTargets() *AppliedTargets {
	return &AppliedTargets{applied: map[types.NamespacedName]appliedTarget{}, bodies: map[types.NamespacedName]*[2]keptBody{}}
}

// Record notes that the body rendered from rendered, applied to the target
// of the switch at key, left the target at resourceVersion.
func (a *AppliedTargets) Record(key types.NamespacedName, rendered RenderedFrom, resourceVersion string) {
	if resourceVersion == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied[key] = appliedTarget{rendered: rendered, resourceVersion: resourceVersion}
}

// Last is the record of the switch at key when its target is still at
// resourceVersion.
func (a *AppliedTargets) Last(key types.NamespacedName, resourceVersion string) (RenderedFrom, bool) {
	a.mu.Lock()
	last, ok := a.applied[key]
	a.mu.Unlock()
	if !ok || resourceVersion == "" || last.resourceVersion != resourceVersion {
		return RenderedFrom{}, false
	}
	return last.rendered, true
}

// Holds reports whether the target of the switch at key, now at
// resourceVersion, is what applying the body rendered from rendered last
// made it: then it is up to date.
func (a *AppliedTargets) Holds(key types.NamespacedName, resourceVersion string, rendered RenderedFrom) bool {
	last, ok := a.Last(key, resourceVersion)
	return ok && last == rendered
}

// ModeAt is the mode of the last apply to the target of the switch at key
// when the target is still at resourceVersion and that apply was rendered
// from what the switch renders from now (rendered; its mode aside): the
// target is then exactly that apply's body, so its shape is that mode's
// template, as target.ModeOf would find by rendering both templates and
// comparing them with it (the most expensive part of a flip's reconcile).
// nil otherwise.
func (a *AppliedTargets) ModeAt(key types.NamespacedName, resourceVersion string, rendered RenderedFrom) *bool {
	last, ok := a.Last(key, resourceVersion)
	if !ok {
		return nil
	}
	rendered.active = last.active
	if last != rendered {
		return nil
	}
	return &last.active
}

// Forget drops the record and the kept bodies of the switch at key, when
// the switch is gone.
func (a *AppliedTargets) Forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.applied, key)
	delete(a.bodies, key)
}

// Keep keeps body, rendered from rendered and applied to the target whose
// UID is targetUID, as the switch at key's body for its mode, in place of
// the one before. A body larger than maxKeptBodyBytes is not kept: the
// mode's next apply renders afresh.
func (a *AppliedTargets) Keep(key types.NamespacedName, rendered RenderedFrom, targetUID types.UID, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.bodies[key]
	if len(body) > maxKeptBodyBytes {
		if kept != nil {
			// The body kept before is of another generation or target.
			kept[modeIndex(rendered.active)] = keptBody{}
			if kept[0].body == nil && kept[1].body == nil {
				delete(a.bodies, key)
			}
		}
		return
	}
	if kept == nil {
		kept = &[2]keptBody{}
		a.bodies[key] = kept
	}
	kept[modeIndex(rendered.active)] = keptBody{rendered: rendered, targetUID: targetUID, body: body}
}

// Body is the kept Body of the switch at key rendered from rendered (all
// of it: UID, generation, mode and the other inputs) for the target whose
// UID is targetUID, or nil.
func (a *AppliedTargets) Body(key types.NamespacedName, rendered RenderedFrom, targetUID types.UID) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.bodies[key]
	if kept == nil {
		return nil
	}
	k := kept[modeIndex(rendered.active)]
	if k.rendered != rendered || k.targetUID != targetUID || targetUID == "" {
		return nil
	}
	return k.body
}

func modeIndex(active bool) int {
	if active {
		return 1
	}
	return 0
}
