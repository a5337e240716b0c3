package controller

import (
	"crypto/sha256"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// appliedTargets remembers, for each switch whose target this manager
// applied, the resourceVersion the API server gave the target and a digest of the apply
// body. A target still at that resourceVersion is exactly what that apply
// made it: the operator's field owner owns precisely the fields of that
// body (an apply with force takes every field it names and gives up every
// field it leaves out). So when the body to apply now has the same digest,
// the target is up to date, decided without decoding its managedFields
// (docs/architecture.md, "Knowing a target is up to date").
//
// It is only a shortcut: any other resourceVersion (someone else wrote the
// target, or the manager restarted with an empty record) falls back to the
// full comparison.
type appliedTargets struct {
	mu      sync.Mutex
	applied map[types.NamespacedName]appliedTarget
}

type appliedTarget struct {
	resourceVersion string
	digest          [sha256.Size]byte
	// generation of the switch whose templates the body was rendered
	// from, and the mode it was rendered in.
	generation int64
	active     bool
}

func newAppliedTargets() *appliedTargets {
	return &appliedTargets{applied: map[types.NamespacedName]appliedTarget{}}
}

// record notes that body, rendered in mode active from the templates of
// the switch at key at generation and applied to its target, left the
// target at resourceVersion. The body names the target.
func (a *appliedTargets) record(key types.NamespacedName, resourceVersion string, body []byte, generation int64, active bool) {
	if resourceVersion == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied[key] = appliedTarget{resourceVersion: resourceVersion, digest: sha256.Sum256(body), generation: generation, active: active}
}

// modeAt is the mode of the last apply to the target of the switch at key
// when the target is still at resourceVersion and the switch's templates
// are still those of generation: the target is then exactly that apply's
// body, so its shape is that mode's template, as target.ModeOf would find
// by rendering both templates and comparing them with it (the most
// expensive part of a flip's reconcile). nil otherwise.
func (a *appliedTargets) modeAt(key types.NamespacedName, resourceVersion string, generation int64) *bool {
	a.mu.Lock()
	last, ok := a.applied[key]
	a.mu.Unlock()
	if !ok || resourceVersion == "" || last.resourceVersion != resourceVersion || last.generation != generation {
		return nil
	}
	return &last.active
}

// holds reports whether the target of the switch at key, now at
// resourceVersion, is what applying body last made it.
func (a *appliedTargets) holds(key types.NamespacedName, resourceVersion string, body []byte) bool {
	a.mu.Lock()
	last, ok := a.applied[key]
	a.mu.Unlock()
	return ok && resourceVersion != "" && last.resourceVersion == resourceVersion && last.digest == sha256.Sum256(body)
}

// forget drops the record of the switch at key, when the switch is gone.
func (a *appliedTargets) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.applied, key)
}
