package switches

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/reference"
	ctrl "sigs.k8s.io/controller-runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/served"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The switching engine's side of spec.served (served.Checks): a check
// started after each target write, and the Served condition in each status.

// checkServed starts the check of spec.served after the target of sw was
// written in the mode active.
func (r *Reconciler) checkServed(sw target.Switch, req ctrl.Request, active bool) {
	if spec := sw.SwitchSpec().Served; spec != nil && r.Served != nil {
		id := target.SwitchID{Kind: r.Kind.SwitchKind(), Key: req.NamespacedName}
		r.Served.Check(id, spec, active, r.Clock.Now(), r.recordServed(sw, r.wake(req)))
	}
}

// servedHold is how much longer a status to write (write) waits for the
// check of the mode active in progress (served.Checks.Holding).
func (r *Reconciler) servedHold(req ctrl.Request, active, write bool) time.Duration {
	if !write || r.Served == nil {
		return 0
	}
	return r.Served.Holding(target.SwitchID{Kind: r.Kind.SwitchKind(), Key: req.NamespacedName}, active, time.Now())
}

// servedView is what the status shows of spec.served (servedCondition),
// starting the check it needs.
func (r *Reconciler) servedView(ctx context.Context, sw target.Switch, req ctrl.Request, active bool) served.View {
	if r.Served == nil {
		return served.View{Cond: meta.FindStatusCondition(sw.SwitchStatus().Conditions, v1beta1.ConditionServed), Status: sw.SwitchStatus().Served}
	}
	id := target.SwitchID{Kind: r.Kind.SwitchKind(), Key: req.NamespacedName}
	var parents served.ParentsAcceptance
	if _, routes := r.Kind.NewTarget().(*gatewayv1.HTTPRoute); routes && sw.SwitchSpec().Served != nil {
		// A route is served once its parents accepted its generation too;
		// a change of their status enqueues the switch (targetChanged).
		live, _ := r.getTarget(ctx, target.Key(sw))
		route, _ := live.(*gatewayv1.HTTPRoute)
		parents = served.RouteParentsAcceptance(route)
	}
	if sw.SwitchSpec().Served == nil {
		r.Served.Forget(id)
		return served.View{}
	}
	view, recheck := served.Condition(sw, active, r.Served.Snapshot(id), parents, time.Now())
	if recheck {
		// spec.served changed, or nothing covers the switch since the
		// manager started: a check from now.
		r.Served.MarkResumed(id)
		r.checkServed(sw, req, active)
		view, _ = served.Condition(sw, active, r.Served.Snapshot(id), parents, time.Now())
	}
	return view
}

// recordServed is the done of a check of sw's target: the metric, a
// NotServed Warning once, and the switch reconciled so that its status
// shows the result.
func (r *Reconciler) recordServed(sw target.Switch, wake func()) func(served.Result) {
	kind, namespace, name := r.Kind.SwitchKind(), sw.GetNamespace(), sw.GetName()
	regarding, err := reference.GetReference(r.Scheme(), sw)
	_, routes := r.Kind.NewTarget().(*gatewayv1.HTTPRoute)
	timeout := served.Timeout(sw.SwitchSpec().Served)
	return func(res served.Result) {
		if routes && res.Served {
			// Its parents may still not accept the route: look again at
			// the timeout, when that turns it NotServed.
			time.AfterFunc(timeout-res.After+time.Millisecond, wake)
		}
		metrics.RecordServed(kind, namespace, name, res.Served, res.After)
		if !res.Served && err == nil {
			r.gate.Record(r.Recorder, regarding, flip.Event{Type: "Warning", Reason: v1beta1.ReasonNotServed, Action: "CheckServed",
				Note: fmt.Sprintf("%s mode not served within the timeout after the target was written: the URL answered %s", decision.ModeName(res.Active), res.Last)})
		}
		wake()
	}
}
