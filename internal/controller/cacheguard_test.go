package controller_test

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// guardedNamespace is watched by the guarded manager alone: the suite's
// manager leaves the namespaces of the tests' own managers alone
// (cacheOptionsExcept), and no two of those tests run at once.
const guardedNamespace = laggingNamespace

// TestReconcilersLeaveTheCacheAlone runs the controllers, with several
// workers, over DynamicIngresses and DynamicHTTPRoutes of two states
// through flips, template edits and metadata edits, with a manager whose
// cache keeps a deep copy of every object it stores. The reconcilers read
// switches, states and targets from the cache without a copy
// (client.UnsafeDisableDeepCopy): what they are handed shares its maps,
// slices and pointers with the cache's own object, so a reconciler that
// changed one (a condition set in place, a default filled in) would change
// what every other reconcile reads. Every stored object must equal its
// copy, while the controllers run (checked every 100ms) and after they
// stop. Under the race detector (make test-race), a write to a cached
// object also races with these checks and with the other workers' reads,
// even one that writes back the value it found.
func TestReconcilersLeaveTheCacheAlone(t *testing.T) {
	guard, stop := startGuardedManager(t, guardedNamespace)
	ns := guardedNamespace
	states := []*v1beta1.DynamicIngressState{
		builders.FixedState(ns, "flag-a", "503", "").Obj(),
		builders.FixedState(ns, "flag-b", "503", "").Obj(),
	}
	create(t, states[0], states[1])
	const ingresses, routes = 24, 6
	var switches []client.Object
	for i := range ingresses {
		switches = append(switches, siteSwitch(ns, fmt.Sprintf("site-%02d", i), states[i%2].Name).ExpectCode("200").Obj())
	}
	for i := range routes {
		host := fmt.Sprintf("route-%02d.example.com", i)
		switches = append(switches, builders.DynamicHTTPRoute(ns, fmt.Sprintf("route-%02d", i)).State(states[i%2].Name).ExpectCode("200").
			Passive(builders.RouteTo(host, "web")).Active(builders.RouteTo(host, "sorry")).Obj())
	}
	create(t, switches...)
	checking := guard.checkEvery(t, 100*time.Millisecond)
	eventually(t, readyCount(t, ns)).Should(Equal(ingresses))
	eventually(t, backendsIn(t, ns)).Should(And(HaveLen(ingresses), HaveEach("web")))

	setFixedStatus(t, states[0], "200")
	setFixedStatus(t, states[1], "200")
	eventually(t, backendsIn(t, ns)).Should(HaveEach("sorry"))
	// Template edits (a new generation) and metadata edits of a third of
	// the switches while the first state flips back.
	setFixedStatus(t, states[0], "503")
	for i := 0; i < ingresses; i += 3 {
		edit(t, switches[i].(*v1beta1.DynamicIngress), func(di *v1beta1.DynamicIngress) {
			di.Spec.PassiveIngress.Template.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "web-v2"
			di.Spec.ActiveIngress.Template.Metadata.Annotations = map[string]string{"example.com/edited": "true"}
			di.Labels = map[string]string{"edited": "true"}
		})
	}
	want := func(i int, active bool) string {
		switch {
		case active:
			return "sorry"
		case i%3 == 0:
			return "web-v2"
		}
		return "web"
	}
	eventually(t, backendsIn(t, ns)).Should(ConsistOf(expectedBackends(ingresses, func(i int) string { return want(i, i%2 == 1) })))
	setFixedStatus(t, states[0], "200")
	setFixedStatus(t, states[1], "503")
	eventually(t, backendsIn(t, ns)).Should(ConsistOf(expectedBackends(ingresses, func(i int) string { return want(i, i%2 == 0) })))
	for i := range routes {
		shape := "sorry"
		if i%2 == 1 {
			shape = "web"
		}
		eventually(t, routeShape(t, ns, fmt.Sprintf("route-%02d", i))).Should(Equal(shape))
	}
	eventually(t, readyCount(t, ns)).Should(Equal(ingresses))

	checking()
	stop()
	if changed := guard.changed(); len(changed) > 0 {
		t.Errorf("%d objects in the manager's cache changed after they were stored; the first:\n%s", len(changed), changed[0])
	}
	if guard.count() < len(switches)+len(states)+ingresses+routes {
		t.Errorf("the guard saw %d objects stored, fewer than the test created: is the cache still transformed through it?", guard.count())
	}
}

// expectedBackends lists the backend of each of n site Ingresses.
func expectedBackends(n int, backend func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = backend(i)
	}
	return out
}

// cacheGuard keeps, for every object a manager's cache stores, a deep copy
// taken as it is stored, to tell whether anything changed the cache's own
// object since.
type cacheGuard struct {
	mu     sync.Mutex
	stored []guardedObject
	// seen are the changes found so far, by object and resourceVersion.
	seen map[string]string
}

type guardedObject struct {
	obj, copy client.Object
}

// transform runs next (when set), then keeps the object it returns, the
// one the cache stores, with a deep copy of it.
func (g *cacheGuard) transform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		out := in
		if next != nil {
			var err error
			if out, err = next(in); err != nil {
				return out, err
			}
		}
		if obj, ok := out.(client.Object); ok {
			g.mu.Lock()
			g.stored = append(g.stored, guardedObject{obj: obj, copy: obj.DeepCopyObject().(client.Object)})
			g.mu.Unlock()
		}
		return out, nil
	}
}

// check compares every stored object with its copy and keeps what differs.
func (g *cacheGuard) check() {
	g.mu.Lock()
	stored := slices.Clone(g.stored)
	g.mu.Unlock()
	for _, s := range stored {
		if equality.Semantic.DeepEqual(s.copy, s.obj) {
			continue
		}
		key := fmt.Sprintf("%T %s/%s at resourceVersion %s", s.obj, s.obj.GetNamespace(), s.obj.GetName(), s.obj.GetResourceVersion())
		diff := cmp.Diff(s.copy, s.obj, cmp.Exporter(func(reflect.Type) bool { return true }))
		g.mu.Lock()
		if g.seen == nil {
			g.seen = map[string]string{}
		}
		g.seen[key] = diff
		g.mu.Unlock()
	}
}

// checkEvery checks the stored objects every interval until the returned
// function is called.
func (g *cacheGuard) checkEvery(t *testing.T, interval time.Duration) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				g.check()
			}
		}
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(stop); <-done }) }
	t.Cleanup(end)
	return end
}

// changed checks once more and lists every change found, with its diff
// "(-stored +now)".
func (g *cacheGuard) changed() []string {
	g.check()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.seen))
	for key, diff := range g.seen {
		out = append(out, key+" (-stored +now):\n"+diff)
	}
	slices.Sort(out)
	return out
}

// count is how many objects the cache stored.
func (g *cacheGuard) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.stored)
}

// startGuardedManager runs the controllers, with several workers, in a
// manager of their own that watches only namespace (startOwnManager), and
// whose cache stores every object through a cacheGuard.
func startGuardedManager(t *testing.T, namespace string) (guard *cacheGuard, stop func()) {
	t.Helper()
	guard = &cacheGuard{}
	cacheOpts := controller.CacheOptions(true, true)
	cacheOpts.DefaultTransform = guard.transform(cacheOpts.DefaultTransform)
	for obj, byObject := range cacheOpts.ByObject {
		byObject.Transform = guard.transform(byObject.Transform)
		cacheOpts.ByObject[obj] = byObject
	}
	stop = startOwnManager(t, namespace, testConfig, cacheOpts, controller.Options{MaxConcurrentReconciles: 4, StateMaxConcurrentReconciles: 2})
	return guard, stop
}
