package controller

import (
	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// reconcileLogger is a controller's LogConstructor: the manager's logger
// with the controller's name and kind, and the object's namespace and name
// as plain strings. controller-runtime's default adds the object as a
// klog.KRef too, which zap encodes for every reconcile whether anything is
// logged or not (docs/benchmarks.md).
func reconcileLogger(mgr ctrl.Manager, name, kind string) func(*reconcile.Request) logr.Logger {
	return loggerFor(mgr.GetLogger(), name, kind)
}

// loggerFor is reconcileLogger over the logger l.
func loggerFor(l logr.Logger, name, kind string) func(*reconcile.Request) logr.Logger {
	base := l.WithValues("controller", name, "controllerGroup", v1beta1.GroupVersion.Group, "controllerKind", kind)
	return func(req *reconcile.Request) logr.Logger {
		if req == nil {
			return base
		}
		return base.WithValues("namespace", req.Namespace, "name", req.Name)
	}
}
