package served

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// What a switch's status shows of its served check: a pure function of the
// check's snapshot, the switch and the clock.

// View is what the status shows of a switch's spec.served: the
// Served condition and status.served; nil condition removes both.
type View struct {
	Cond   *metav1.Condition
	Status *v1beta1.ServedStatus
}

// Snapshot is what the served checks know of one switch: its check
// in progress (checking, of the mode active and the spec.served key spec),
// its last decided check, and whether it was checked once without a
// target write (resumed).
type Snapshot struct {
	checking bool
	active   bool
	spec     string
	result   Result
	decided  bool
	resumed  bool
}

// Condition is what the status of sw, whose target is in the mode
// active, shows of its spec.served (not nil): Checking while a check of
// the current spec.served is in progress, Served or NotServed once one is
// decided. recheck is true when sw needs a check from now although no
// target write started one: its spec.served changed since the check in
// progress or decided (the answer of that check is about another URL or
// matcher), or nothing covers it and its Served is not True for its mode
// (a manager restarted, or spec.served just added; once per manager,
// snap.resumed).
func Condition(sw target.Switch, active bool, snap Snapshot, parents ParentsAcceptance, now time.Time) (view View, recheck bool) {
	spec := sw.SwitchSpec().Served
	key := servedSpecKey(spec)
	status := sw.SwitchStatus()
	mode := v1beta1.ModePassive
	if active {
		mode = v1beta1.ModeActive
	}
	cond := metav1.Condition{Type: v1beta1.ConditionServed, ObservedGeneration: sw.GetGeneration()}
	current := snap.checking && snap.spec == key || !snap.checking && snap.decided && snap.result.spec == key
	switch {
	case (snap.checking || snap.decided) && !current:
		return View{Status: status.Served}, true
	case snap.checking && snap.active == active:
		cond.Status, cond.Reason = metav1.ConditionUnknown, v1beta1.ReasonChecking
		cond.Message = fmt.Sprintf("the target was written in %s mode; requesting %s every %s until it answers as that shape does (timeout %s)",
			decision.ModeName(active), probe.RedactURL(spec.URL), servedPeriod(spec), Timeout(spec))
		return View{Cond: &cond, Status: status.Served}, false
	case snap.decided && snap.result.Active == active:
		return decidedView(spec, active, mode, snap.result, status, parents, cond, now), false
	}
	prev := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionServed)
	if prev != nil && prev.Status == metav1.ConditionTrue && status.Served != nil && status.Served.Mode == mode {
		return View{Cond: prev, Status: status.Served}, false
	}
	if !snap.resumed {
		return View{Status: status.Served}, true
	}
	if prev != nil {
		return View{Cond: prev, Status: status.Served}, false
	}
	return View{}, false
}

// decidedView is the Served condition of a decided check (result) of the
// mode active: Served, NotServed, or Checking while an HTTPRoute's parents
// have not accepted its generation (parents) within the timeout.
func decidedView(spec *v1beta1.ServedCheck, active bool, mode v1beta1.Mode, result Result, status *v1beta1.SwitchStatus,
	parents ParentsAcceptance, cond metav1.Condition, now time.Time) View {
	switch {
	case result.Served && parents != nil && parents() != "":
		// The URL answers with the shape; the route's parents have not
		// all accepted its generation yet.
		if written := result.at.Add(-result.After); now.After(written.Add(Timeout(spec))) {
			cond.Status, cond.Reason = metav1.ConditionFalse, v1beta1.ReasonNotServed
			cond.Message = fmt.Sprintf("%s mode not served within %s after the target was written: %s",
				decision.ModeName(active), Timeout(spec), parents())
			return View{Cond: &cond, Status: status.Served}
		}
		cond.Status, cond.Reason = metav1.ConditionUnknown, v1beta1.ReasonChecking
		cond.Message = fmt.Sprintf("%s answers as the %s shape does (%s after the target was written); %s",
			probe.RedactURL(spec.URL), decision.ModeName(active), decision.FormatAfter(result.After), parents())
		return View{Cond: &cond, Status: status.Served}
	case result.Served:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1beta1.ReasonServed
		cond.Message = fmt.Sprintf("%s mode served %s after the target was written", decision.ModeName(active), decision.FormatAfter(result.After))
		served := &v1beta1.ServedStatus{Mode: mode, Since: metav1.NewTime(result.at.Truncate(time.Second)), After: decision.FormatAfter(result.After)}
		if prev := status.Served; prev != nil && prev.Mode == mode && prev.After == served.After {
			served = prev
		}
		return View{Cond: &cond, Status: served}
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, v1beta1.ReasonNotServed
	cond.Message = fmt.Sprintf("%s mode not served within %s after the target was written: %s answered %s",
		decision.ModeName(active), Timeout(spec), probe.RedactURL(spec.URL), result.Last)
	return View{Cond: &cond, Status: status.Served}
}
