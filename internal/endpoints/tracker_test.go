package endpoints

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// fixture is a tracker fed through its own stores, as the reflectors of
// Watch feed it, recording each notification with what Get said of the
// Service at that moment.
type fixture struct {
	tr       *Tracker
	services map[string]*store
	slices   map[string]*store
	// notified is each notification, with what Get returned inside
	// Notify; sorted within each store operation (whose order of
	// notifications is unspecified).
	notified []notice
	// underLock is set when Notify was called with the tracker locked.
	underLock bool
}

func newFixture() *fixture {
	f := &fixture{tr: NewTracker(), services: map[string]*store{}, slices: map[string]*store{}}
	f.tr.Notify = func(key types.NamespacedName) {
		if !f.tr.mu.TryRLock() {
			f.underLock = true
			return
		}
		f.tr.mu.RUnlock()
		f.notified = append(f.notified, notice{key, f.tr.Get(key)})
	}
	return f
}

// notice is one call of Notify and what Get said then.
type notice struct {
	Key types.NamespacedName
	Get Service
}

// run makes the store operations, sorting each one's notifications.
func (f *fixture) run(ops []op) error {
	for i, o := range ops {
		from := len(f.notified)
		if err := o(f); err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		slices.SortFunc(f.notified[from:], func(a, b notice) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	}
	return nil
}

// serviceStore and sliceStore are the stores of namespace ns ("" for
// all), made once each.
func (f *fixture) serviceStore(ns string) *store {
	if f.services[ns] == nil {
		f.services[ns] = f.tr.serviceStore(ns)
	}
	return f.services[ns]
}

func (f *fixture) sliceStore(ns string) *store {
	if f.slices[ns] == nil {
		f.slices[ns] = f.tr.sliceStore(ns)
	}
	return f.slices[ns]
}

// op is one call to a store, as a reflector makes it.
type op func(f *fixture) error

func meta(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func addService(ns, name string) op {
	return func(f *fixture) error { return f.serviceStore("").Add(meta(ns, name)) }
}

func updateService(ns, name string) op {
	return func(f *fixture) error { return f.serviceStore("").Update(meta(ns, name)) }
}

func deleteService(ns, name string) op {
	return func(f *fixture) error { return f.serviceStore("").Delete(meta(ns, name)) }
}

// deleteServiceUnknown is a deletion the watch missed, found on a relist.
func deleteServiceUnknown(ns, name string) op {
	return func(f *fixture) error {
		return f.serviceStore("").Delete(cache.DeletedFinalStateUnknown{Key: ns + "/" + name, Obj: meta(ns, name)})
	}
}

func addSlice(w *builders.SliceWrapper) op {
	return func(f *fixture) error { return f.sliceStore("").Add(w.Obj()) }
}

func updateSlice(w *builders.SliceWrapper) op {
	return func(f *fixture) error { return f.sliceStore("").Update(w.Obj()) }
}

func deleteSlice(w *builders.SliceWrapper) op {
	return func(f *fixture) error { return f.sliceStore("").Delete(w.Obj()) }
}

func deleteSliceUnknown(w *builders.SliceWrapper) op {
	return func(f *fixture) error {
		es := w.Obj()
		return f.sliceStore("").Delete(cache.DeletedFinalStateUnknown{Key: es.Namespace + "/" + es.Name, Obj: es})
	}
}

// replaceServices is a relist of the Services of ns ("" for all).
func replaceServices(ns string, keys ...types.NamespacedName) op {
	return func(f *fixture) error {
		list := make([]any, 0, len(keys))
		for _, k := range keys {
			list = append(list, meta(k.Namespace, k.Name))
		}
		return f.serviceStore(ns).Replace(list, "2")
	}
}

// replaceSlices is a relist of the EndpointSlices of ns ("" for all).
func replaceSlices(ns string, ws ...*builders.SliceWrapper) op {
	return func(f *fixture) error {
		list := make([]any, 0, len(ws))
		for _, w := range ws {
			list = append(list, w.Obj())
		}
		return f.sliceStore(ns).Replace(list, "2")
	}
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// ofService is an IPv4 EndpointSlice ns/name of the Service ns/service.
func ofService(ns, name, service string) *builders.SliceWrapper {
	return builders.EndpointSlice(ns, name, service)
}

// unlabelled is an EndpointSlice ns/name without the service-name label
// (a slice a controller of its own writes).
func unlabelled(ns, name string) *builders.SliceWrapper {
	w := builders.EndpointSlice(ns, name, "")
	w.Labels = nil
	return w
}

// holding is what the tracker holds: Services() as a pair.
type holding struct{ Services, Slices int }

// TestTracker: each store operation's effect on Get, on the Services
// notified (exactly those whose existence or count changed, each once,
// outside the tracker's lock) and on the entries kept.
func TestTracker(t *testing.T) {
	tests := []struct {
		name   string
		before []op
		ops    []op
		// want is Get of these Services after ops (the zero Service for
		// one the tracker does not hold).
		want map[types.NamespacedName]Service
		// wantNotified is each notification of ops, sorted within an
		// operation.
		wantNotified []notice
		wantHeld     holding
	}{
		{
			name:         "a Service appears",
			ops:          []op{addService("a", "web")},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true}}},
			wantHeld:     holding{1, 0},
		},
		{
			name:     "a Service updated",
			before:   []op{addService("a", "web")},
			ops:      []op{updateService("a", "web")},
			want:     map[types.NamespacedName]Service{key("a", "web"): {Exists: true}},
			wantHeld: holding{1, 0},
		},
		{
			name:         "a slice before its Service",
			ops:          []op{addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Ready: 2}},
			wantNotified: []notice{{key("a", "web"), Service{Ready: 2}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:         "a slice of an existing Service",
			before:       []op{addService("a", "web")},
			ops:          []op{addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 2}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true, Ready: 2}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:   "a Service appears after its slice",
			before: []op{addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:    []op{addService("a", "web")},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {Exists: true, Ready: 2},
				// The slice counts in its own namespace only.
				key("b", "web"): {},
			},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true, Ready: 2}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:     "addresses churn at the same count",
			before:   []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:      []op{updateSlice(ofService("a", "web-1", "web").Ready("10.0.0.3", "10.0.0.4"))},
			want:     map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 2}},
			wantHeld: holding{1, 1},
		},
		{
			name:     "a not-ready endpoint added",
			before:   []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:      []op{updateSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2").NotReady("10.0.0.3"))},
			want:     map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 2}},
			wantHeld: holding{1, 1},
		},
		{
			name:   "a ready endpoint starts terminating",
			before: []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops: []op{updateSlice(ofService("a", "web-1", "web").Ready("10.0.0.1").
				Endpoint("10.0.0.2", ptr.To(true), ptr.To(true)))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 1}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true, Ready: 1}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:     "a second slice repeats the first's addresses",
			before:   []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:      []op{addSlice(ofService("a", "web-2", "web").Ready("10.0.0.2", "10.0.0.1"))},
			want:     map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 2}},
			wantHeld: holding{1, 2},
		},
		{
			name:         "a second slice adds an address",
			before:       []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:          []op{addSlice(ofService("a", "web-2", "web").Ready("10.0.0.2", "10.0.0.3"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 3}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true, Ready: 3}}},
			wantHeld:     holding{1, 2},
		},
		{
			name: "a slice deleted",
			before: []op{addService("a", "web"),
				addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2")), addSlice(ofService("a", "web-2", "web").Ready("10.0.0.3"))},
			ops:          []op{deleteSlice(ofService("a", "web-1", "web"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 1}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true, Ready: 1}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:     "a slice whose addresses another slice holds deleted",
			before:   []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1")), addSlice(ofService("a", "web-2", "web").Ready("10.0.0.1"))},
			ops:      []op{deleteSlice(ofService("a", "web-1", "web"))},
			want:     map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 1}},
			wantHeld: holding{1, 1},
		},
		{
			name:         "a slice deleted while the watch was down",
			before:       []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:          []op{deleteSliceUnknown(ofService("a", "web-1", "web"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true}}},
			wantHeld:     holding{1, 0},
		},
		{
			name:     "a slice never seen deleted",
			ops:      []op{deleteSlice(ofService("a", "web-1", "web").Ready("10.0.0.1"))},
			want:     map[types.NamespacedName]Service{key("a", "web"): {}},
			wantHeld: holding{0, 0},
		},
		{
			name:         "a Service deleted, its slices still there",
			before:       []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:          []op{deleteService("a", "web")},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Ready: 2}},
			wantNotified: []notice{{key("a", "web"), Service{Ready: 2}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:         "a Service deleted while the watch was down",
			before:       []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1"))},
			ops:          []op{deleteServiceUnknown("a", "web")},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Ready: 1}},
			wantNotified: []notice{{key("a", "web"), Service{Ready: 1}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:         "a Service without slices deleted",
			before:       []op{addService("a", "web")},
			ops:          []op{deleteService("a", "web")},
			want:         map[types.NamespacedName]Service{key("a", "web"): {}},
			wantNotified: []notice{{key("a", "web"), Service{}}},
			wantHeld:     holding{0, 0},
		},
		{
			name:     "a Service never seen deleted",
			ops:      []op{deleteService("a", "web")},
			want:     map[types.NamespacedName]Service{key("a", "web"): {}},
			wantHeld: holding{0, 0},
		},
		{
			name: "the last slice of a deleted Service goes",
			before: []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2")),
				deleteService("a", "web")},
			ops:          []op{deleteSlice(ofService("a", "web-1", "web"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {}},
			wantNotified: []notice{{key("a", "web"), Service{}}},
			wantHeld:     holding{0, 0},
		},
		{
			name:   "a slice moves to another Service",
			before: []op{addService("a", "web"), addService("a", "api"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:    []op{updateSlice(ofService("a", "web-1", "api").Ready("10.0.0.1", "10.0.0.2"))},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {Exists: true},
				key("a", "api"): {Exists: true, Ready: 2},
			},
			wantNotified: []notice{{key("a", "api"), Service{Exists: true, Ready: 2}}, {key("a", "web"), Service{Exists: true}}},
			wantHeld:     holding{2, 1},
		},
		{
			name:   "a slice moves to a Service not seen yet, from one that no longer exists",
			before: []op{addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:    []op{updateSlice(ofService("a", "web-1", "api").Ready("10.0.0.1"))},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {},
				key("a", "api"): {Ready: 1},
			},
			wantNotified: []notice{{key("a", "api"), Service{Ready: 1}}, {key("a", "web"), Service{}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:   "a slice moves and back",
			before: []op{addService("a", "web"), addService("a", "api"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops: []op{
				updateSlice(ofService("a", "web-1", "api").Ready("10.0.0.1", "10.0.0.2")),
				updateSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2")),
			},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {Exists: true, Ready: 2},
				key("a", "api"): {Exists: true},
			},
			wantNotified: []notice{
				{key("a", "api"), Service{Exists: true, Ready: 2}}, {key("a", "web"), Service{Exists: true}},
				{key("a", "api"), Service{Exists: true}}, {key("a", "web"), Service{Exists: true, Ready: 2}},
			},
			wantHeld: holding{2, 1},
		},
		{
			name:         "a slice loses its label",
			before:       []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:          []op{updateSlice(unlabelled("a", "web-1").Ready("10.0.0.1", "10.0.0.2"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true}}},
			wantHeld:     holding{1, 0},
		},
		{
			name:     "a slice without the label",
			before:   []op{addService("a", "web")},
			ops:      []op{addSlice(unlabelled("a", "web-1").Ready("10.0.0.1"))},
			want:     map[types.NamespacedName]Service{key("a", "web"): {Exists: true}},
			wantHeld: holding{1, 0},
		},
		{
			name:     "a slice without the label deleted",
			before:   []op{addSlice(unlabelled("a", "web-1").Ready("10.0.0.1"))},
			ops:      []op{deleteSlice(unlabelled("a", "web-1"))},
			want:     map[types.NamespacedName]Service{key("a", "web"): {}},
			wantHeld: holding{0, 0},
		},
		{
			name:         "a slice gains its label",
			before:       []op{addService("a", "web"), addSlice(unlabelled("a", "web-1").Ready("10.0.0.1"))},
			ops:          []op{updateSlice(ofService("a", "web-1", "web").Ready("10.0.0.1"))},
			want:         map[types.NamespacedName]Service{key("a", "web"): {Exists: true, Ready: 1}},
			wantNotified: []notice{{key("a", "web"), Service{Exists: true, Ready: 1}}},
			wantHeld:     holding{1, 1},
		},
		{
			name:   "the same names in another namespace",
			before: []op{addService("a", "web"), addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2"))},
			ops:    []op{addService("b", "web"), addSlice(ofService("b", "web-1", "web").Ready("10.0.0.1"))},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {Exists: true, Ready: 2},
				key("b", "web"): {Exists: true, Ready: 1},
			},
			wantNotified: []notice{{key("b", "web"), Service{Exists: true}}, {key("b", "web"), Service{Exists: true, Ready: 1}}},
			wantHeld:     holding{2, 2},
		},
		{
			name: "a relist of one namespace's slices",
			before: []op{addService("a", "web"), addService("a", "api"), addService("b", "web"),
				addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2")),
				addSlice(ofService("a", "api-1", "api").Ready("10.0.1.1")),
				addSlice(ofService("b", "web-1", "web").Ready("10.0.0.1", "10.0.0.2", "10.0.0.3"))},
			ops: []op{replaceSlices("a",
				// web's addresses changed, not its count; api's slice is gone;
				// db's is new.
				ofService("a", "web-1", "web").Ready("10.0.0.3", "10.0.0.4"),
				ofService("a", "db-1", "db").Ready("10.0.2.1"))},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {Exists: true, Ready: 2},
				key("a", "api"): {Exists: true},
				key("a", "db"):  {Ready: 1},
				key("b", "web"): {Exists: true, Ready: 3},
			},
			wantNotified: []notice{{key("a", "api"), Service{Exists: true}}, {key("a", "db"), Service{Ready: 1}}},
			wantHeld:     holding{4, 3},
		},
		{
			name: "a relist of one namespace's Services",
			before: []op{addService("a", "web"), addService("a", "api"), addService("a", "old"), addService("b", "web"),
				addSlice(ofService("a", "api-1", "api").Ready("10.0.1.1"))},
			ops: []op{replaceServices("a", key("a", "web"), key("a", "new"))},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {Exists: true},
				key("a", "api"): {Ready: 1},
				key("a", "old"): {},
				key("a", "new"): {Exists: true},
				key("b", "web"): {Exists: true},
			},
			wantNotified: []notice{{key("a", "api"), Service{Ready: 1}}, {key("a", "new"), Service{Exists: true}}, {key("a", "old"), Service{}}},
			// a/web, a/api (its slice is left), a/new, b/web.
			wantHeld: holding{4, 1},
		},
		{
			name: "a relist of every namespace",
			before: []op{addService("a", "web"), addService("b", "web"),
				addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1")),
				addSlice(ofService("b", "web-1", "web").Ready("10.0.0.1"))},
			ops: []op{
				replaceServices("", key("b", "web")),
				replaceSlices("", ofService("b", "web-1", "web").Ready("10.0.0.1")),
			},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {},
				key("b", "web"): {Exists: true, Ready: 1},
			},
			wantNotified: []notice{{key("a", "web"), Service{Ready: 1}}, {key("a", "web"), Service{}}},
			wantHeld:     holding{1, 1},
		},
		{
			name: "a relist that finds what was there",
			before: []op{addService("a", "web"), addService("a", "api"),
				addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2")),
				addSlice(ofService("a", "web-2", "web").Ready("10.0.0.3"))},
			ops: []op{
				replaceServices("a", key("a", "web"), key("a", "api")),
				replaceSlices("a", ofService("a", "web-2", "web").Ready("10.0.0.3"), ofService("a", "web-1", "web").Ready("10.0.0.1", "10.0.0.2")),
			},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {Exists: true, Ready: 3},
				key("a", "api"): {Exists: true},
			},
			wantHeld: holding{2, 2},
		},
		{
			name: "a relist of an empty namespace",
			before: []op{addService("a", "web"), addService("b", "web"),
				addSlice(ofService("a", "web-1", "web").Ready("10.0.0.1")), addSlice(ofService("b", "web-1", "web").Ready("10.0.0.1"))},
			ops: []op{replaceServices("a"), replaceSlices("a")},
			want: map[types.NamespacedName]Service{
				key("a", "web"): {},
				key("b", "web"): {Exists: true, Ready: 1},
			},
			wantNotified: []notice{{key("a", "web"), Service{Ready: 1}}, {key("a", "web"), Service{}}},
			wantHeld:     holding{1, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			if err := f.run(tt.before); err != nil {
				t.Fatalf("before: %v", err)
			}
			f.notified = nil
			if err := f.run(tt.ops); err != nil {
				t.Fatal(err)
			}
			if f.underLock {
				t.Errorf("Notify was called with the tracker locked")
			}
			got := map[types.NamespacedName]Service{}
			for k := range tt.want {
				got[k] = f.tr.Get(k)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNotified, f.notified, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("notified, with Get at the time (-want +got):\n%s", diff)
			}
			var held holding
			held.Services, held.Slices = f.tr.Services()
			if diff := cmp.Diff(tt.wantHeld, held); diff != "" {
				t.Errorf("Services() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTrackerHasSynced: the tracker is synced once every store it counts
// has had its first list, in whatever order, and stays so on relists;
// a tracker without stores never is.
func TestTrackerHasSynced(t *testing.T) {
	tr := NewTracker()
	if tr.HasSynced() {
		t.Fatalf("HasSynced() = true without stores")
	}
	// Two namespaces, as NewWatch counts them.
	tr.stores.Add(4)
	stores := []*store{tr.sliceStore("b"), tr.serviceStore("a"), tr.serviceStore("b"), tr.sliceStore("a")}
	// Adds before the first list, and a store's second list, do not count.
	if err := stores[1].Add(meta("a", "web")); err != nil {
		t.Fatal(err)
	}
	if err := stores[3].Add(ofService("a", "web-1", "web").Obj()); err != nil {
		t.Fatal(err)
	}
	got := []bool{tr.HasSynced()}
	for _, s := range []*store{stores[0], stores[0], stores[1], stores[2]} {
		if err := s.Replace(nil, "1"); err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.HasSynced())
	}
	if err := stores[3].Replace(nil, "1"); err != nil {
		t.Fatal(err)
	}
	got = append(got, tr.HasSynced())
	for _, s := range stores {
		if err := s.Replace(nil, "2"); err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.HasSynced())
	}
	want := []bool{false, false, false, false, false, true, true, true, true, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HasSynced after each operation (-want +got):\n%s", diff)
	}
}

// TestTrackerWithoutNotify: a tracker nobody listens to still counts.
func TestTrackerWithoutNotify(t *testing.T) {
	tr := NewTracker()
	if err := tr.serviceStore("").Add(meta("a", "web")); err != nil {
		t.Fatal(err)
	}
	if err := tr.sliceStore("").Add(ofService("a", "web-1", "web").Ready("10.0.0.1").Obj()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Service{Exists: true, Ready: 1}, tr.Get(key("a", "web"))); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
}

// TestTrackerMemory: what the tracker keeps of 10 000 Services, each with
// one slice of 10 ready IPv4 endpoints, in 100 namespaces: at most 1 KiB
// of heap a slice, its Service included. The measured figure is logged
// (go test -run TestTrackerMemory -v).
func TestTrackerMemory(t *testing.T) {
	const (
		namespaces = 100
		services   = 10_000
		endpoints  = 10
		budget     = 1024
	)
	object := func(i int) (*metav1.PartialObjectMetadata, *discoveryv1.EndpointSlice) {
		ns, name := fmt.Sprintf("team-%03d", i%namespaces), fmt.Sprintf("service-%05d", i)
		w := builders.EndpointSlice(ns, fmt.Sprintf("%s-%05x", name, i*7919%0xfffff), name)
		for e := range endpoints {
			w.Ready(fmt.Sprintf("10.%d.%d.%d", i/256, i%256, e))
		}
		return meta(ns, name), w.Obj()
	}
	for _, how := range []string{"listed", "watched"} {
		t.Run(how, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			tr := NewTracker()
			svcStore, sliceStore := tr.serviceStore(""), tr.sliceStore("")
			if how == "listed" {
				var svcs, slices []any
				for i := range services {
					m, es := object(i)
					svcs, slices = append(svcs, m), append(slices, es)
				}
				if err := svcStore.Replace(svcs, "1"); err != nil {
					t.Fatal(err)
				}
				if err := sliceStore.Replace(slices, "1"); err != nil {
					t.Fatal(err)
				}
			} else {
				for i := range services {
					m, es := object(i)
					if err := svcStore.Add(m); err != nil {
						t.Fatal(err)
					}
					if err := sliceStore.Add(es); err != nil {
						t.Fatal(err)
					}
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			perSlice := retained / services
			t.Logf("%s: %d bytes retained for %d Services with one slice of %d endpoints each: %d bytes a slice", how, retained, services, endpoints, perSlice)
			if got := tr.Get(key("team-042", "service-00042")); got != (Service{Exists: true, Ready: endpoints}) {
				t.Errorf("Get(team-042/service-00042) = %+v, want it existing with %d ready", got, endpoints)
			}
			var held holding
			held.Services, held.Slices = tr.Services()
			if diff := cmp.Diff(holding{services, services}, held); diff != "" {
				t.Errorf("Services() (-want +got):\n%s", diff)
			}
			if perSlice > budget {
				t.Errorf("the tracker keeps %d bytes a slice, want at most %d", perSlice, budget)
			}
			runtime.KeepAlive(tr)
		})
	}
}

// TestTrackerConcurrent: stores fed from several goroutines, Services and
// slices coming and going, while others read, end with the count of what
// was fed last (run with -race: it reports an unguarded read or write).
func TestTrackerConcurrent(t *testing.T) {
	tr := NewTracker()
	const writers, rounds = 8, 200
	names := make([]string, writers)
	for w := range names {
		names[w] = fmt.Sprintf("svc-%d", w)
	}
	var wg sync.WaitGroup
	for w, svc := range names {
		wg.Go(func() {
			services, slices := tr.serviceStore("a"), tr.sliceStore("a")
			for i := range rounds {
				es := ofService("a", svc+"-1", svc).Ready(fmt.Sprintf("10.0.%d.%d", w, i%5), "10.0.255.1").Obj()
				_ = services.Add(meta("a", svc))
				_ = slices.Update(es)
				if i%3 == 0 && i < rounds-1 {
					// Gone and back: the entry is dropped and made again.
					_ = services.Delete(meta("a", svc))
					_ = slices.Delete(es)
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				for _, other := range names {
					_ = tr.Get(key("a", other))
				}
				_, _ = tr.Services()
				_ = tr.HasSynced()
			}
		})
	}
	wg.Wait()
	var got []Service
	for _, svc := range names {
		got = append(got, tr.Get(key("a", svc)))
	}
	want := slices.Repeat([]Service{{Exists: true, Ready: 2}}, writers)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after concurrent updates (-want +got):\n%s", diff)
	}
}

// TestTrackerForgetsServicesThatWent: Services that come and go (a
// namespace per pull request, a Service per job) leave nothing behind once
// their Service and slices are gone: no entry, and no memory (an earlier
// version interned every name it saw and never let go, about 136 bytes a
// Service).
func TestTrackerForgetsServicesThatWent(t *testing.T) {
	tr := NewTracker()
	services, slices := tr.serviceStore(""), tr.sliceStore("")
	cycle := func(from, to int) {
		for i := from; i < to; i++ {
			ns, name := fmt.Sprintf("pr-%d", i), fmt.Sprintf("web-%d", i)
			es := ofService(ns, name+"-abcde", name).Ready("10.0.0.1").Obj()
			for _, err := range []error{services.Add(meta(ns, name)), slices.Add(es), slices.Delete(es), services.Delete(meta(ns, name))} {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cycle(0, 1000) // the maps reach their working size
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cycle(1000, 101000)
	runtime.GC()
	runtime.ReadMemStats(&after)
	var held holding
	held.Services, held.Slices = tr.Services()
	if diff := cmp.Diff(holding{}, held); diff != "" {
		t.Errorf("Services() (-want +got):\n%s", diff)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("the heap grew by %d bytes after 100 000 Services came and went, want at most 1 MiB", grew)
	}
	runtime.KeepAlive(tr)
}

// TestTransformKeepsTheCount: what the first load keeps of each object
// (the store's transformer) counts as the object itself does, whatever its
// endpoints' conditions, and keeps the Service's label.
func TestTransformKeepsTheCount(t *testing.T) {
	tr := NewTracker()
	s := tr.sliceStore("")
	es := ofService("shop", "web-1", "web").Ready("10.0.0.1", "10.0.0.2").NotReady("10.0.0.3").
		Endpoint("10.0.0.4", nil, new(true)).Endpoint("10.0.0.5", nil, nil).Obj()
	es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.6", "10.0.0.7"}})
	got, err := s.Transformer()(es)
	if err != nil {
		t.Fatal(err)
	}
	reduced := got.(*discoveryv1.EndpointSlice)
	if Ready([]discoveryv1.EndpointSlice{*reduced}) != Ready([]discoveryv1.EndpointSlice{*es}) || Ready([]discoveryv1.EndpointSlice{*es}) != 4 {
		t.Errorf("the reduced slice counts %d, the slice %d, want 4 both", Ready([]discoveryv1.EndpointSlice{*reduced}), Ready([]discoveryv1.EndpointSlice{*es}))
	}
	if reduced.Labels[discoveryv1.LabelServiceName] != "web" || reduced.Name != "web-1" || reduced.Namespace != "shop" {
		t.Errorf("the reduced slice lost its name or label: %+v", reduced.ObjectMeta)
	}
	if err := s.Replace([]any{got}, "1"); err != nil {
		t.Fatal(err)
	}
	if svc := tr.Get(types.NamespacedName{Namespace: "shop", Name: "web"}); svc.Ready != 4 {
		t.Errorf("after a first load of reduced slices, Ready = %d, want 4", svc.Ready)
	}
}
