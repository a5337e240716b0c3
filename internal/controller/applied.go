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
type appliedTargets struct {
	mu      sync.Mutex
	applied map[types.NamespacedName]appliedTarget
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
	return &appliedTargets{applied: map[types.NamespacedName]appliedTarget{}}
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

// forget drops the record of the switch at key, when the switch is gone.
func (a *appliedTargets) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.applied, key)
}
