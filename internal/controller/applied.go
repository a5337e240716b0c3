package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// appliedTargets remembers, for each switch whose target this manager
// applied, the resourceVersion the API server gave the target, and what the
// apply body was rendered from: the switch (its UID and generation, which
// fix its templates and its target's name) and the mode. A target still at
// that resourceVersion is exactly what that apply made it: the operator's
// field owner owns precisely the fields of that body (an apply with force
// takes every field it names and gives up every field it leaves out), and
// rendering is a pure function of the switch's spec and the mode. So a
// reconcile that would render the same body finds the target up to date
// without rendering anything or decoding the target's managedFields
// (docs/architecture.md, "Knowing a target is up to date").
//
// It is only a shortcut: any other resourceVersion (someone else wrote the
// target, or the manager restarted with an empty record) falls back to the
// full comparison.
//
// It also keeps, per switch and mode, the body of the last apply in that
// mode (keptBody): a flip back to a mode applies that body again, as long
// as the switch's UID and generation and the target's UID are the ones it
// was rendered for, without rendering the template or encoding the body
// again. That is two bodies of well under a kilobyte per switch that ever
// flipped.
type appliedTargets struct {
	mu      sync.Mutex
	applied map[types.NamespacedName]appliedTarget
	// bodies are the kept bodies of each switch, by mode: [0] passive,
	// [1] active.
	bodies map[types.NamespacedName]*[2]keptBody
}

// keptBody is an apply body, what it was rendered from, and the UID of the
// target it was applied to (the body carries it as a precondition).
type keptBody struct {
	rendered  renderedFrom
	targetUID types.UID
	body      []byte
}

// appliedTarget is one switch's last apply: what it was rendered from and
// the resourceVersion it left the target at.
type appliedTarget struct {
	rendered        renderedFrom
	resourceVersion string
}

// renderedFrom is what an apply body is rendered from: the switch's UID
// and generation (its templates), and the mode.
type renderedFrom struct {
	uid        types.UID
	generation int64
	active     bool
}

func newAppliedTargets() *appliedTargets {
	return &appliedTargets{applied: map[types.NamespacedName]appliedTarget{}, bodies: map[types.NamespacedName]*[2]keptBody{}}
}

// record notes that the body rendered from rendered, applied to the target
// of the switch at key, left the target at resourceVersion.
func (a *appliedTargets) record(key types.NamespacedName, rendered renderedFrom, resourceVersion string) {
	if resourceVersion == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied[key] = appliedTarget{rendered: rendered, resourceVersion: resourceVersion}
}

// last is the record of the switch at key when its target is still at
// resourceVersion.
func (a *appliedTargets) last(key types.NamespacedName, resourceVersion string) (renderedFrom, bool) {
	a.mu.Lock()
	last, ok := a.applied[key]
	a.mu.Unlock()
	if !ok || resourceVersion == "" || last.resourceVersion != resourceVersion {
		return renderedFrom{}, false
	}
	return last.rendered, true
}

// holds reports whether the target of the switch at key, now at
// resourceVersion, is what applying the body rendered from rendered last
// made it: then it is up to date.
func (a *appliedTargets) holds(key types.NamespacedName, resourceVersion string, rendered renderedFrom) bool {
	last, ok := a.last(key, resourceVersion)
	return ok && last == rendered
}

// modeAt is the mode of the last apply to the target of the switch at key
// when the target is still at resourceVersion and the switch's templates
// are still those of uid at generation: the target is then exactly that
// apply's body, so its shape is that mode's template, as target.ModeOf
// would find by rendering both templates and comparing them with it (the
// most expensive part of a flip's reconcile). nil otherwise.
func (a *appliedTargets) modeAt(key types.NamespacedName, resourceVersion string, uid types.UID, generation int64) *bool {
	last, ok := a.last(key, resourceVersion)
	if !ok || last.uid != uid || last.generation != generation {
		return nil
	}
	return &last.active
}

// forget drops the record and the kept bodies of the switch at key, when
// the switch is gone.
func (a *appliedTargets) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.applied, key)
	delete(a.bodies, key)
}

// keep keeps body, rendered from rendered and applied to the target whose
// UID is targetUID, as the switch at key's body for its mode, in place of
// the one before.
func (a *appliedTargets) keep(key types.NamespacedName, rendered renderedFrom, targetUID types.UID, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := a.bodies[key]
	if kept == nil {
		kept = &[2]keptBody{}
		a.bodies[key] = kept
	}
	kept[modeIndex(rendered.active)] = keptBody{rendered: rendered, targetUID: targetUID, body: body}
}

// body is the kept body of the switch at key rendered from rendered for
// the target whose UID is targetUID, or nil.
func (a *appliedTargets) body(key types.NamespacedName, rendered renderedFrom, targetUID types.UID) []byte {
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
