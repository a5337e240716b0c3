package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
)

// lister lists a namespace's objects of one kind and watches them from a
// resourceVersion.
type lister interface {
	list(ctx context.Context) (rv string, objs []runtime.Object, err error)
	watch(ctx context.Context, rv string) (watch.Interface, error)
}

// arrivals records, from a watch, when each object first satisfies match,
// relative to a start set just before the change that should cause it.
type arrivals struct {
	mu    sync.Mutex
	t0    time.Time
	times map[string]time.Duration
	want  int
	full  chan struct{}
	err   error
	// before is how many objects matched already when the watch started.
	before int
	cancel context.CancelFunc
	done   chan struct{}
}

// watchArrivals lists the objects, then watches them from the list's
// resourceVersion until stop; call start right before the change.
func watchArrivals(ctx context.Context, l lister, want int, match func(runtime.Object) (string, bool)) (*arrivals, error) {
	rv, objs, err := l.list(ctx)
	if err != nil {
		return nil, err
	}
	a := &arrivals{times: map[string]time.Duration{}, want: want, full: make(chan struct{}), done: make(chan struct{}), t0: time.Now()}
	for _, o := range objs {
		if _, ok := match(o); ok {
			a.before++
		}
	}
	ctx, a.cancel = context.WithCancel(ctx)
	w, err := l.watch(ctx, rv)
	if err != nil {
		a.cancel()
		return nil, err
	}
	go func() {
		defer close(a.done)
		for {
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Error:
					a.fail(apierrors.FromObject(ev.Object))
					return
				case watch.Bookmark, watch.Added, watch.Modified:
					if m, err := meta.Accessor(ev.Object); err == nil {
						rv = m.GetResourceVersion()
					}
					if ev.Type == watch.Bookmark {
						continue
					}
					if name, ok := match(ev.Object); ok {
						a.record(name)
					}
				}
			}
			w.Stop()
			if ctx.Err() != nil {
				return
			}
			// The API server ended the watch: go on from where it was.
			if w, err = l.watch(ctx, rv); err != nil {
				a.fail(err)
				return
			}
		}
	}()
	return a, nil
}

// startAt sets the time arrivals are measured from.
func (a *arrivals) startAt(t0 time.Time) {
	a.mu.Lock()
	a.t0 = t0
	a.mu.Unlock()
}

func (a *arrivals) record(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.times[name]; ok {
		return
	}
	a.times[name] = time.Since(a.t0)
	if len(a.times) == a.want {
		close(a.full)
	}
}

func (a *arrivals) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

// wait returns once every object arrived, or fails after timeout.
func (a *arrivals) wait(timeout time.Duration) error {
	select {
	case <-a.full:
		return nil
	case <-a.done:
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.times) == a.want {
			return nil
		}
		return fmt.Errorf("the watch ended with %d of %d arrived: %v", len(a.times), a.want, a.err)
	case <-time.After(timeout):
		a.mu.Lock()
		defer a.mu.Unlock()
		return fmt.Errorf("%d of %d arrived within %s", len(a.times), a.want, timeout)
	}
}

func (a *arrivals) stop() {
	a.cancel()
	<-a.done
}

// durations returns the arrival times.
func (a *arrivals) durations() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]time.Duration, 0, len(a.times))
	for _, d := range a.times {
		out = append(out, d)
	}
	return out
}

// arrivalSet is one watch per namespace, read as one: the arrivals of
// objects spread over namespaces (see switches).
type arrivalSet struct {
	namespaces []string
	each       []*arrivals
}

// watchFlip watches the Ingresses of s for the shape a flip to active (or
// back) gives them, and fails when any already has it: every flip starts
// from the other shape. The caller stops the watch.
func (b *bench) watchFlip(ctx context.Context, s switches, active bool) (*arrivalSet, error) {
	ingW, err := s.watchArrivals(ctx, b.ingresses, ingressShape(active))
	if err != nil {
		return nil, err
	}
	if before := ingW.before(); before != 0 {
		ingW.stop()
		return nil, fmt.Errorf("%d Ingresses already have the new shape before the flip", before)
	}
	return ingW, nil
}

// watchArrivals watches, in every namespace of s, the objects that l lists
// there (s.in of them) until stop; call startAt right before the change.
func (s switches) watchArrivals(ctx context.Context, l func(ns string) lister, match func(runtime.Object) (string, bool)) (*arrivalSet, error) {
	set := &arrivalSet{namespaces: s.namespaces}
	for k, ns := range s.namespaces {
		a, err := watchArrivals(ctx, l(ns), s.in(k), match)
		if err != nil {
			set.stop()
			return nil, err
		}
		set.each = append(set.each, a)
	}
	return set, nil
}

// startAt sets the time every watch measures from.
func (s *arrivalSet) startAt(t0 time.Time) {
	for _, a := range s.each {
		a.startAt(t0)
	}
}

// before is how many objects matched already when the watches started.
func (s *arrivalSet) before() int {
	n := 0
	for _, a := range s.each {
		n += a.before
	}
	return n
}

// wait returns once every object of every namespace arrived, or fails
// after timeout.
func (s *arrivalSet) wait(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for k, a := range s.each {
		// At least a second each, so that a namespace whose objects have
		// all arrived answers so even past the deadline.
		if err := a.wait(max(time.Until(deadline), time.Second)); err != nil {
			return fmt.Errorf("namespace %s: %w", s.namespaces[k], err)
		}
	}
	return nil
}

func (s *arrivalSet) stop() {
	for _, a := range s.each {
		a.stop()
	}
}

// durations returns the arrival times of every namespace.
func (s *arrivalSet) durations() []time.Duration {
	var out []time.Duration
	for _, a := range s.each {
		out = append(out, a.durations()...)
	}
	return out
}

// ingressLister watches a namespace's Ingresses over protobuf.
type ingressLister struct {
	h  *harness
	ns string
}

func (l ingressLister) list(ctx context.Context) (string, []runtime.Object, error) {
	list, err := l.h.watchCS.NetworkingV1().Ingresses(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", nil, err
	}
	objs := make([]runtime.Object, 0, len(list.Items))
	for i := range list.Items {
		objs = append(objs, &list.Items[i])
	}
	return list.ResourceVersion, objs, nil
}

func (l ingressLister) watch(ctx context.Context, rv string) (watch.Interface, error) {
	timeout := int64(3600)
	return l.h.watchCS.NetworkingV1().Ingresses(l.ns).Watch(ctx, metav1.ListOptions{
		ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
}

// crLister watches one of this project's kinds in a namespace.
type crLister struct {
	h       *harness
	ns      string
	newList func() client.ObjectList
}

func (l crLister) list(ctx context.Context) (string, []runtime.Object, error) {
	list := l.listFn()
	if err := l.h.c.List(ctx, list, client.InNamespace(l.ns)); err != nil {
		return "", nil, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return "", nil, err
	}
	return list.GetResourceVersion(), objs, nil
}

func (l crLister) listFn() client.ObjectList { return l.newList() }

func (l crLister) watch(ctx context.Context, rv string) (watch.Interface, error) {
	timeout := int64(3600)
	return l.h.c.Watch(ctx, l.listFn(), client.InNamespace(l.ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout}})
}

func dynamicIngresses(h *harness, ns string) crLister {
	return crLister{h: h, ns: ns, newList: func() client.ObjectList { return &v1beta1.DynamicIngressList{} }}
}

func states(h *harness, ns string) crLister {
	return crLister{h: h, ns: ns, newList: func() client.ObjectList { return &v1beta1.DynamicIngressStateList{} }}
}

func clusterStates(h *harness) crLister {
	return crLister{h: h, newList: func() client.ObjectList { return &v1beta1.ClusterDynamicIngressStateList{} }}
}

// The two shapes of every Ingress in the flip measures: passive routes the
// host to "web"; active routes it to "sorry" and carries an annotation.
const (
	activeBackend  = "sorry"
	passiveBackend = "web"
	modeAnnotation = "example.com/mode"
)

// hasShape tells whether an Ingress has the active or the passive shape.
func hasShape(ing *networkingv1.Ingress, active bool) bool {
	if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].HTTP == nil || len(ing.Spec.Rules[0].HTTP.Paths) != 1 {
		return false
	}
	svc := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
	if svc == nil {
		return false
	}
	_, annotated := ing.Annotations[modeAnnotation]
	if active {
		return svc.Name == activeBackend && annotated
	}
	return svc.Name == passiveBackend && !annotated
}

func ingressShape(active bool) func(runtime.Object) (string, bool) {
	return func(o runtime.Object) (string, bool) {
		ing, ok := o.(*networkingv1.Ingress)
		if !ok {
			return "", false
		}
		return ing.Name, hasShape(ing, active)
	}
}

// diSettled matches a DynamicIngress whose status shows the mode as
// `kubectl dynamic wait` requires it (docs/kubectl-dynamic.md): Active for
// the mode and Ready True, both at the switch's current generation.
func diSettled(active bool) func(runtime.Object) (string, bool) {
	return func(o runtime.Object) (string, bool) {
		di, ok := o.(*v1beta1.DynamicIngress)
		if !ok {
			return "", false
		}
		shows, _, _ := plugin.StatusShows(di, active)
		return di.Name, shows
	}
}

// stateCode matches the state name (of either kind) when its status shows
// a status code.
func stateCode(name, code string) func(runtime.Object) (string, bool) {
	return func(o runtime.Object) (string, bool) {
		s, ok := o.(interface {
			client.Object
			StateStatus() *v1beta1.DynamicIngressStateStatus
		})
		if !ok {
			return "", false
		}
		return s.GetName(), s.GetName() == name && s.StateStatus().StatusCode == code
	}
}
