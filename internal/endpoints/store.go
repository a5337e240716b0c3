package endpoints

import (
	"sync/atomic"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// store adapts the tracker to a reflector of one kind in one namespace
// ("" for all): it keeps nothing itself.
type store struct {
	t         *Tracker
	namespace string
	put       func(b *batch, obj any)
	remove    func(b *batch, obj any)
	// clear takes out everything of the store's kind in its namespace,
	// before a relist puts back what is there.
	clear  func(b *batch, namespace string)
	synced atomic.Bool
}

var _ cache.TransformingStore = &store{}

// Transformer implements cache.TransformingStore: the reflector's first
// load (a watch list) keeps every object until the load ends, and keeps
// them as transform returns them, not whole.
func (s *store) Transformer() cache.TransformFunc { return s.transform }

// transform reduces a Service to its name and an EndpointSlice to what
// the count reads, keeping their kinds (put reads either form).
func (s *store) transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name, ResourceVersion: o.ResourceVersion}}, nil
	case *discoveryv1.EndpointSlice:
		return reduceSlice(o), nil
	}
	return obj, nil
}

// reduceSlice is an EndpointSlice with what the count reads: its
// Service label, its address type, and its ready endpoints' first
// addresses, one endpoint each (conditions unset count as ready).
func reduceSlice(es *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: es.Namespace, Name: es.Name, ResourceVersion: es.ResourceVersion},
		AddressType: es.AddressType,
	}
	if svc, ok := es.Labels[discoveryv1.LabelServiceName]; ok {
		out.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
	}
	for i := range es.Endpoints {
		e := &es.Endpoints[i]
		if len(e.Addresses) > 0 && counts(e.Conditions) {
			out.Endpoints = append(out.Endpoints, discoveryv1.Endpoint{Addresses: e.Addresses[:1:1]})
		}
	}
	return out
}

func (s *store) Add(obj any) error {
	b := s.t.begin()
	defer b.end()
	s.put(b, obj)
	return nil
}

func (s *store) Update(obj any) error { return s.Add(obj) }

func (s *store) Delete(obj any) error {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	b := s.t.begin()
	defer b.end()
	s.remove(b, obj)
	return nil
}

func (s *store) Replace(list []any, _ string) error {
	b := s.t.begin()
	s.clear(b, s.namespace)
	for _, obj := range list {
		s.put(b, obj)
	}
	b.end()
	if !s.synced.Swap(true) {
		s.t.synced.Add(1)
	}
	return nil
}

func (s *store) Resync() error { return nil }

// The kinds of store.
type storeKind int

const (
	serviceKind storeKind = iota
	sliceKind
)

// newStore returns a store that feeds the tracker with Services (their
// metadata) or EndpointSlices in namespace ("" for all). The caller
// counted it in t.stores.
func (t *Tracker) newStore(namespace string, kind storeKind) *store {
	if kind == sliceKind {
		return t.sliceStore(namespace)
	}
	return t.serviceStore(namespace)
}

func (t *Tracker) serviceStore(namespace string) *store {
	return &store{t: t, namespace: namespace,
		put: func(b *batch, obj any) {
			m := obj.(*metav1.PartialObjectMetadata)
			b.setService(m.Namespace, m.Name, true)
		},
		remove: func(b *batch, obj any) {
			m := obj.(*metav1.PartialObjectMetadata)
			b.setService(m.Namespace, m.Name, false)
		},
		clear: func(b *batch, namespace string) {
			for key, s := range t.services {
				if s.exists && (namespace == "" || key.Namespace == namespace) {
					b.service(key).exists = false
				}
			}
		},
	}
}

func (t *Tracker) sliceStore(namespace string) *store {
	return &store{t: t, namespace: namespace,
		put: func(b *batch, obj any) { b.putSlice(obj.(*discoveryv1.EndpointSlice)) },
		remove: func(b *batch, obj any) {
			es := obj.(*discoveryv1.EndpointSlice)
			b.removeSlice(types.NamespacedName{Namespace: es.Namespace, Name: es.Name})
		},
		clear: func(b *batch, namespace string) {
			for key := range t.owners {
				if namespace == "" || key.Namespace == namespace {
					b.removeSlice(key)
				}
			}
		},
	}
}
