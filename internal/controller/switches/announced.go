package switches

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
)

// announcedModes keeps, for each switch whose target writes changed its
// mode, the Switched events of those changes and the last mode they
// switched to, until the switch's status is settled. The events are
// recorded then, behind the flip's target writes like the status (the
// status gate), one per change: a state that flaps back before the status
// is written changes the target twice and the status never, and both
// changes are announced. The status write that follows does not announce
// the same switch a second time, while a change of the status alone (the
// target is not ours) is still announced once. A restarted manager
// remembers nothing: a switch written before the restart is announced when
// its status catches up. Safe for concurrent use.
type announcedModes struct {
	mu    sync.Mutex
	modes map[types.NamespacedName]announcement
}

// announcement is what is to be announced of one switch.
type announcement struct {
	// events are the Switched events still to record.
	events []flip.Event
	// active is the mode of the last change.
	active bool
}

func newAnnouncedModes() *announcedModes {
	return &announcedModes{modes: map[types.NamespacedName]announcement{}}
}

// add records that a target write switched the switch at key to active (or
// passive), with its Switched event.
func (a *announcedModes) add(key types.NamespacedName, active bool, event flip.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	entry := a.modes[key]
	entry.events = append(entry.events, event)
	entry.active = active
	a.modes[key] = entry
}

// peek returns the events of the switch at key still to record, and
// whether its last change was to the mode active says (the status about to
// be written then announces nothing more). forget drops them once they are
// recorded.
func (a *announcedModes) peek(key types.NamespacedName, active bool) (events []flip.Event, announced bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	entry, ok := a.modes[key]
	return entry.events, ok && entry.active == active
}

// mode is the mode of the last change announced for the switch at key,
// and whether there is one whose status is not written yet (its events
// are pending).
func (a *announcedModes) mode(key types.NamespacedName) (active, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	entry, ok := a.modes[key]
	return entry.active, ok
}

// forget drops the switch at key: its status is written, or it is gone.
func (a *announcedModes) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.modes, key)
}
