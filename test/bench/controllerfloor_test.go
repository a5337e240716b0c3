package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// The controller floor is the owned floor's flip made the least way a
// controller makes it: what any operator pays on top of the plain
// client's writes, so that the operator's own share of its ratio to the
// owned floor can be told from what a controller costs at all
// (docs/benchmarks.md, "The controller floor").
//
// A controller-runtime manager in the bench's process (its defaults: the
// same work queue and client as the operator's manager) runs one
// controller. It watches the owner ConfigMap of the owned floor's first
// namespace, its trigger: when the trigger's data names another mode, the
// controller queues every Ingress of the floor (in every namespace, as a
// cluster state's flip does). Each of its workers reads the trigger and
// the Ingress from the manager's cache and sends the owned floor's apply
// for it (the controller ownerReference and the Ingress's UID as a
// precondition, from the cache). The cache holds the floor's
// Ingresses through an informer selected by label, as the operator's
// holds its targets, so it decodes every write of the flip; it queues
// nothing for them. The flip is timed from the trigger's patch, as the
// operator's is from the state's edit.

// controllerFloorName names the controller floor of a number of workers.
func controllerFloorName(workers int) string { return fmt.Sprintf("floor-controller-%d", workers) }

// controllerFloorMode is the key of the owner ConfigMaps' data that names
// the mode the controller floor writes.
const controllerFloorMode = "mode"

// controllerFloor is one controller floor's manager, running.
type controllerFloor struct {
	cancel context.CancelFunc
	done   chan error
}

// startControllerFloor starts the controller floor over the owned floor's
// Ingresses s, owned by own, with workers reconcile workers, and returns
// once its caches are synced and its controller started.
func (b *bench) startControllerFloor(ctx context.Context, s switches, workers int, own owners) (*controllerFloor, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	var all []reconcile.Request
	namespaces := map[string]cache.Config{}
	for i := range s.n {
		all = append(all, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.ns(i), Name: objName(i)}})
		namespaces[s.ns(i)] = cache.Config{}
	}
	trigger := types.NamespacedName{Namespace: s.namespaces[0], Name: "owner"}
	mgr, err := ctrl.NewManager(rest.CopyConfig(b.h.cfg), ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultNamespaces: namespaces, ByObject: map[client.Object]cache.ByObject{
			&networkingv1.Ingress{}: {Label: labels.SelectorFromSet(labels.Set{v1beta1.LabelManagedBy: baselineLabel})},
		}},
		// A manager of its own for each step: the controller's name again.
		Controller: crconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("the controller floor's manager: %w", err)
	}
	r := &controllerFloorReconciler{cache: mgr.GetClient(), cs: b.h.cs, own: own, trigger: trigger, ready: make(chan struct{})}
	queued := make(chan struct{})
	err = ctrl.NewControllerManagedBy(mgr).Named("controllerfloor").
		Watches(&corev1.ConfigMap{}, handler.Funcs{UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			queueModeChange(e, trigger, all, q)
		}}).
		// The informer of the floor's Ingresses: every write of the flip
		// comes back through it, as the operator's targets do.
		Watches(&networkingv1.Ingress{}, handler.Funcs{}).
		// Its workers start once every informer has synced: a request
		// of its own, queued first, tells when they have.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(controllerFloorReady)
			close(queued)
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("the controller floor's controller: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	f := &controllerFloor{cancel: cancel, done: make(chan error, 1)}
	go func() { f.done <- mgr.Start(runCtx) }()
	select {
	case <-r.ready:
		<-queued
		return f, nil
	case err := <-f.done:
		cancel()
		return nil, fmt.Errorf("the controller floor's manager stopped: %w", err)
	case <-time.After(60 * time.Second):
		return nil, errors.Join(errors.New("the controller floor's workers did not start within 60s"), f.stop())
	}
}

// stop stops the controller floor's manager and returns what its Start
// returned.
func (f *controllerFloor) stop() error {
	f.cancel()
	return <-f.done
}

// queueModeChange queues all when the trigger's mode changed.
func queueModeChange(e event.UpdateEvent, trigger types.NamespacedName, all []reconcile.Request, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	before, okBefore := e.ObjectOld.(*corev1.ConfigMap)
	after, okAfter := e.ObjectNew.(*corev1.ConfigMap)
	if !okBefore || !okAfter || client.ObjectKeyFromObject(after) != trigger || before.Data[controllerFloorMode] == after.Data[controllerFloorMode] {
		return
	}
	for _, req := range all {
		q.Add(req)
	}
}

// controllerFloorReady is the request that tells the controller floor's
// workers have started (no Ingress has an empty namespace).
var controllerFloorReady = reconcile.Request{NamespacedName: types.NamespacedName{Name: "ready"}}

// controllerFloorReconciler applies one Ingress in the trigger's mode.
type controllerFloorReconciler struct {
	cache   client.Reader
	cs      kubernetes.Interface
	own     owners
	trigger types.NamespacedName
	// ready is closed by the reconcile of controllerFloorReady.
	ready chan struct{}
}

func (r *controllerFloorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req == controllerFloorReady {
		close(r.ready)
		return reconcile.Result{}, nil
	}
	var trigger corev1.ConfigMap
	if err := r.cache.Get(ctx, r.trigger, &trigger); err != nil {
		return reconcile.Result{}, err
	}
	var ing networkingv1.Ingress
	if err := r.cache.Get(ctx, req.NamespacedName, &ing); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	active := trigger.Data[controllerFloorMode] == "active"
	ac := ownedApply(req.Namespace, req.Name, active, r.own[req.Namespace], ing.UID)
	_, err := r.cs.NetworkingV1().Ingresses(req.Namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: floorFieldManager, Force: true})
	return reconcile.Result{}, err
}

// controllerFloorFlip flips the owned floor's Ingresses s to active (or
// back) through the running controller floor: from the trigger's patch
// until the watch shows every Ingress in the new shape.
func (b *bench) controllerFloorFlip(ctx context.Context, s switches, active bool, workers int) (flipRun, error) {
	run := flipRun{who: controllerFloorName(workers), n: s.n, active: active}
	ingW, err := b.watchFlip(ctx, s, active)
	if err != nil {
		return run, err
	}
	defer ingW.stop()
	if err := b.collectAPIServerGarbage(ctx); err != nil {
		return run, err
	}
	mode := "passive"
	if active {
		mode = "active"
	}
	patch := fmt.Appendf(nil, `{"data":{%q:%q}}`, controllerFloorMode, mode)
	cpu0 := b.h.cpu(nil)
	stopProfile := b.profileAPIServer(ctx, fmt.Sprintf("%s-%d-%s", run.who, s.n, direction(active)))
	defer stopProfile()
	t0 := time.Now()
	ingW.startAt(t0)
	if _, err := b.h.cs.CoreV1().ConfigMaps(s.namespaces[0]).Patch(ctx, "owner", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return run, err
	}
	run.writerDone = time.Since(t0)
	if err := ingW.wait(flipTimeout(s.n, 10*time.Millisecond)); err != nil {
		return run, fmt.Errorf("controller floor flip: %w", err)
	}
	run.cpuArrived = b.h.cpu(nil).sub(cpu0)
	run.cpu = run.cpuArrived
	run.summarize(ingW.durations())
	return run, nil
}

// controllerFloorStep is the controller floor's step of round rep of a
// measure (what): its manager started (untimed), the owned floor's
// Ingresses s flipped to active and back through it, the manager stopped.
func (b *bench) controllerFloorStep(ctx context.Context, what string, rep int, s switches, workers int, own owners, res *flipSuiteResult) func() error {
	return func() error {
		f, err := b.startControllerFloor(ctx, s, workers, own)
		if err != nil {
			return err
		}
		defer func() {
			if err := f.stop(); err != nil {
				b.progress("%s %s round %d: the controller floor's manager stopped with %v", what, s, rep+1, err)
			}
		}()
		return b.flipPair(what, rep, s, res, func(active bool) (flipRun, error) {
			return b.controllerFloorFlip(ctx, s, active, workers)
		})
	}
}
