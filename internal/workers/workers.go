// Package workers holds what every reconciler of the manager runs with:
// its logger and the rate limiter of its retries.
package workers

import (
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// Logger is a controller's LogConstructor: the manager's logger
// with the controller's name and kind, and the object's namespace and name
// as plain strings. controller-runtime's default adds the object as a
// klog.KRef too, which zap encodes for every reconcile whether anything is
// logged or not (docs/benchmarks.md).
func Logger(mgr ctrl.Manager, name, kind string) func(*reconcile.Request) logr.Logger {
	return loggerFor(mgr.GetLogger(), name, kind)
}

// loggerFor is Logger over the logger l.
func loggerFor(l logr.Logger, name, kind string) func(*reconcile.Request) logr.Logger {
	base := l.WithValues("controller", name, "controllerGroup", v1beta1.GroupVersion.Group, "controllerKind", kind)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("namespace", req.Namespace, "name", req.Name)
	}
}

// MaxRetryDelay caps the backoff between retries of a failed reconcile
// (a write the API server refused, or could not be reached for).
const MaxRetryDelay = 60 * time.Second

// RetryRateLimiter retries a failed reconcile after 5ms, doubling up to
// MaxRetryDelay.
func RetryRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxRetryDelay)
}
