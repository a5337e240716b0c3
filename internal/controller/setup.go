package controller

import (
	"context"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// Options configure both controllers.
type Options struct {
	// Guard refuses probe connections to denied addresses.
	Guard probe.Guard
	// MaxBodyBytes is the longest probed body kept in a state's status.
	MaxBodyBytes int64
	// MaxConcurrentReconciles of the DynamicIngress controller.
	MaxConcurrentReconciles int
	// StateMaxConcurrentReconciles of the DynamicIngressState controller.
	StateMaxConcurrentReconciles int
	// Clock drives probes, schedules and timestamps; the real clock when
	// nil.
	Clock Clock
}

// Clock is what the controllers need of a clock: tickers for probes and
// timers for schedule boundaries.
type Clock interface {
	clock.WithTicker
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// CacheOptions restricts the manager's cache of Ingresses to the ones the
// operator manages, so that its memory does not grow with the Ingresses of
// everyone else.
func CacheOptions() cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&networkingv1.Ingress{}: {
				Label: labels.SelectorFromSet(labels.Set{v1beta1.LabelManagedBy: v1beta1.ManagedByValue}),
			},
		},
	}
}

// SetupWithManager registers the field indexes and both controllers.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if err := index.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("registering field indexes: %w", err)
	}
	states := NewDynamicIngressStateReconciler(mgr.GetClient(), mgr.GetEventRecorder("dynamicingressstate-controller"),
		opts.Clock, probe.NewProber(opts.Guard, opts.MaxBodyBytes))
	states.MaxConcurrentReconciles = opts.StateMaxConcurrentReconciles
	if err := states.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the DynamicIngressState controller: %w", err)
	}
	dis := &DynamicIngressReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder("dynamicingress-controller"),
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		writes:                  newOwnWrites(opts.Clock),
		Clock:                   opts.Clock,
	}
	if err := dis.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the DynamicIngress controller: %w", err)
	}
	return nil
}

// MaxRetryDelay caps the backoff between retries of a failed reconcile
// (a write the API server refused, or could not be reached for).
const MaxRetryDelay = 60 * time.Second

// retryRateLimiter retries a failed reconcile after 5ms, doubling up to
// MaxRetryDelay.
func retryRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxRetryDelay)
}

// NewScheme returns a scheme with the built-in kinds and this project's.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	return scheme
}
