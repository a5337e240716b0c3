package endpoints

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Watch is a manager.Runnable that feeds a Tracker from the API server:
// Services' metadata and EndpointSlices, in every namespace or in the
// manager's namespaces. It needs list and watch on both.
type Watch struct {
	tracker    *Tracker
	slices     kubernetes.Interface
	meta       metadata.Interface
	namespaces []string
}

// NewWatch returns the watch of Services and EndpointSlices in namespaces
// (every namespace when empty) that feeds tracker once started.
func NewWatch(cfg *rest.Config, tracker *Tracker, namespaces []string) (*Watch, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for EndpointSlices: %w", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for Services: %w", err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	w := &Watch{tracker: tracker, slices: cs, meta: mc, namespaces: namespaces}
	for range namespaces {
		// Counted now, so that HasSynced is false until each has listed.
		tracker.stores.Add(2)
	}
	return w, nil
}

// Start runs one reflector per kind and namespace until ctx ends.
func (w *Watch) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, ns := range w.namespaces {
		services := w.tracker.newStore(ns, serviceKind)
		slices := w.tracker.newStore(ns, sliceKind)
		run := func(name string, lw cache.ListerWatcher, expected runtime.Object, s cache.ReflectorStore) {
			r := cache.NewReflectorWithOptions(lw, expected, s, cache.ReflectorOptions{Name: name + " in " + nsName(ns)})
			wg.Go(func() { r.RunWithContext(ctx) })
		}
		run("services", w.serviceLW(ns), &metav1.PartialObjectMetadata{}, services)
		run("endpointslices", w.sliceLW(ns), &discoveryv1.EndpointSlice{}, slices)
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

func nsName(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return ns
}

func (w *Watch) serviceLW(ns string) cache.ListerWatcher {
	res := w.meta.Resource(serviceGVR).Namespace(ns)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts)
		},
	}
}

func (w *Watch) sliceLW(ns string) cache.ListerWatcher {
	res := w.slices.DiscoveryV1().EndpointSlices(ns)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts)
		},
	}
}

// serviceGVR is the resource the Service store lists.
var serviceGVR = corev1.SchemeGroupVersion.WithResource("services")
