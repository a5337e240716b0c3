package endpoints

import (
	"slices"
	"sync"
	"sync/atomic"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Service is what the manager knows of one Service: whether it exists and
// how many ready endpoints it has.
type Service struct {
	// Exists is true while the Service exists.
	Exists bool
	// Ready is its number of ready endpoints (0 without EndpointSlices).
	Ready int
}

// Tracker keeps the count of ready endpoints of every Service it sees and
// calls Notify with a Service whose existence or count changed. It is fed
// by reflectors (Start) through two stores of its own, which keep of each
// object only what the count needs: nothing of a Service but its name, and
// of an EndpointSlice its ready addresses' hashes.
type Tracker struct {
	// Notify is called, outside the tracker's lock, with each Service
	// whose existence or ready count changed.
	Notify func(types.NamespacedName)

	mu       sync.RWMutex
	services map[types.NamespacedName]*service
	// owners maps an EndpointSlice to the Service it is counted in, so
	// that a slice that moves or goes is taken out of the right one.
	owners map[types.NamespacedName]*service

	// stores is how many stores feed the tracker; synced how many of them
	// have had their first list.
	stores, synced atomic.Int32
}

type service struct {
	key    types.NamespacedName
	exists bool
	slices []slice
	ready  int
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{
		services: map[types.NamespacedName]*service{},
		owners:   map[types.NamespacedName]*service{},
	}
}

// Get returns what the tracker knows of the Service with this key.
func (t *Tracker) Get(key types.NamespacedName) Service {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.services[key]
	if s == nil {
		return Service{}
	}
	return Service{Exists: s.exists, Ready: s.ready}
}

// HasSynced reports whether every store has had its first list: before,
// a Service may look missing or empty only because it was not listed yet.
func (t *Tracker) HasSynced() bool {
	n := t.stores.Load()
	return n > 0 && t.synced.Load() == n
}

// Services is how many Services and EndpointSlices the tracker holds.
func (t *Tracker) Services() (services, slices int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.services), len(t.owners)
}

// batch is one update under the lock: the Services it touched and how
// they were before.
type batch struct {
	t       *Tracker
	touched map[types.NamespacedName]Service
}

func (t *Tracker) begin() *batch {
	t.mu.Lock()
	return &batch{t: t, touched: map[types.NamespacedName]Service{}}
}

// service returns the entry of key, creating it, and remembers how it
// was before the batch.
func (b *batch) service(key types.NamespacedName) *service {
	s := b.t.services[key]
	if _, seen := b.touched[key]; !seen {
		before := Service{}
		if s != nil {
			before = Service{Exists: s.exists, Ready: s.ready}
		}
		b.touched[key] = before
	}
	if s == nil {
		s = &service{key: key}
		b.t.services[key] = s
	}
	return s
}

func (b *batch) setService(namespace, name string, exists bool) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	b.service(key).exists = exists
}

func (b *batch) removeSlice(sliceKey types.NamespacedName) {
	owner := b.t.owners[sliceKey]
	if owner == nil {
		return
	}
	delete(b.t.owners, sliceKey)
	b.service(owner.key)
	owner.slices = slices.DeleteFunc(owner.slices, func(x slice) bool { return x.name == sliceKey.Name })
	owner.ready = count(owner.slices)
}

func (b *batch) putSlice(es *discoveryv1.EndpointSlice) {
	ns := es.Namespace
	sliceKey := types.NamespacedName{Namespace: ns, Name: es.Name}
	svcName, labelled := es.Labels[discoveryv1.LabelServiceName]
	owner := b.t.owners[sliceKey]
	var key types.NamespacedName
	if labelled {
		key = types.NamespacedName{Namespace: ns, Name: svcName}
	}
	if owner != nil && (!labelled || b.t.services[key] != owner) {
		// The slice moved to another Service, or left every Service.
		b.removeSlice(sliceKey)
	}
	if !labelled {
		return
	}
	s := b.service(key)
	p := project(es)
	p.name = sliceKey.Name
	if i := slices.IndexFunc(s.slices, func(x slice) bool { return x.name == p.name }); i >= 0 {
		s.slices[i] = p
	} else {
		s.slices = append(s.slices, p)
	}
	s.ready = count(s.slices)
	b.t.owners[sliceKey] = s
}

// end drops the entries that hold nothing, unlocks, and notifies the
// Services whose existence or count changed.
func (b *batch) end() {
	var changed []types.NamespacedName
	for key, before := range b.touched {
		s := b.t.services[key]
		if !s.exists && len(s.slices) == 0 {
			delete(b.t.services, key)
		}
		if now := (Service{Exists: s.exists, Ready: s.ready}); now != before {
			changed = append(changed, key)
		}
	}
	b.t.mu.Unlock()
	if b.t.Notify == nil {
		return
	}
	for _, key := range changed {
		b.t.Notify(key)
	}
}
