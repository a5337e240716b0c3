package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// WaitFor is what wait waits for besides every switch being in shape with
// its status saying so.
type WaitFor struct {
	// Accepted: every parent of each DynamicHTTPRoute's HTTPRoute accepted
	// its current generation.
	Accepted bool
	// Served: the Served condition of each switch with spec.served is True
	// for the mode the decision selects (ServedOf).
	Served bool
}

// OutOfShape names what keeps a snapshot from being done: a state whose
// status does not show its spec yet, and each switch whose target is not in
// the shape the state's current response selects, or whose status does not
// say so, or (with Accepted) a DynamicHTTPRoute whose HTTPRoute some parent
// has not accepted at its current generation, or (with Served) a switch
// with spec.served whose status does not show that mode served. Empty when
// all is done.
func OutOfShape(snap *Snapshot, report Report, now time.Time, until WaitFor) []string {
	var out []string
	if why := stateBehind(snap.State, now); why != "" {
		out = append(out, why)
	}
	for _, sw := range report.Switches {
		var why []string
		if !sw.InShape {
			why = append(why, fmt.Sprintf("its target %s is not in %s shape", sw.Target, sw.Mode))
		}
		if !sw.Synced {
			why = append(why, fmt.Sprintf("its status is not synced (%s: %s)", sw.Reason, sw.Message))
		}
		if until.Accepted && sw.Accepted != "" && sw.Accepted != AcceptedTrue {
			why = append(why, fmt.Sprintf("HTTPRoute %s accepted: %s", sw.Target, sw.Accepted))
		}
		if until.Served && sw.Served != "" && sw.Served != ServedTrue {
			why = append(why, fmt.Sprintf("%s mode served: %s (%s)", sw.Mode, sw.Served, sw.ServedMessage))
		}
		if len(why) > 0 {
			name := fmt.Sprintf("%q", sw.Name)
			if sw.Namespace != "" {
				name = fmt.Sprintf("%s/%s", sw.Namespace, sw.Name)
			}
			out = append(out, fmt.Sprintf("%s %s: %s", sw.Kind, name, strings.Join(why, "; ")))
		}
	}
	return out
}

// stateBehind says why the state's status does not show its spec yet ("" when
// it does): a switch that follows an old response would look done.
func stateBehind(state *v1beta1.DynamicIngressState, now time.Time) string {
	name := fmt.Sprintf("state %q", state.Name)
	if state.Status.ObservedGeneration != state.Generation {
		return fmt.Sprintf("%s: its status shows generation %d, not %d yet", name, state.Status.ObservedGeneration, state.Generation)
	}
	if ready := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady); ready != nil && ready.Reason == v1beta1.ReasonPending {
		return fmt.Sprintf("%s: %s", name, ready.Message)
	}
	if state.Spec.Schedule != nil {
		if want, _ := decision.ScheduledStatus(state, metav1.NewTime(now)); want.Body != state.Status.Body || want.StatusCode != state.Status.StatusCode {
			return fmt.Sprintf("%s: its status does not show the schedule's answer at %s yet", name, now.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

// WaitOptions are the options of Wait.
type WaitOptions struct {
	// Namespace is where the state and its switches are; for a cluster
	// state, where its followers are watched, "" for every namespace.
	Namespace string
	// State names the state; Cluster says it is a ClusterDynamicIngressState.
	State   string
	Cluster bool
	Timeout time.Duration
	// Accepted waits also for every parent of each DynamicHTTPRoute's
	// HTTPRoute to accept its current generation.
	Accepted bool
	// Served waits also for the Served condition of every switch with
	// spec.served to be True for the mode (WaitFor.Served).
	Served bool
	Clock  clock.Clock
}

// TimeoutError says what was still out of shape when Wait gave up.
type TimeoutError struct {
	State   string
	Timeout time.Duration
	Pending []string
	// NotAdmitted counts the followers left out: the grant does not admit
	// them.
	NotAdmitted int
}

func (e *TimeoutError) Error() string {
	const most = 5
	shown := e.Pending
	more := ""
	if len(shown) > most {
		more = fmt.Sprintf("; and %d more", len(shown)-most)
		shown = shown[:most]
	}
	if e.NotAdmitted > 0 {
		more += fmt.Sprintf(" (left out %d %s not admitted by the grant)", e.NotAdmitted, pluralOf(e.NotAdmitted, "follower", "followers"))
	}
	return fmt.Sprintf("timed out after %s waiting for state %q: %d not in shape: %s%s",
		e.Timeout, e.State, len(e.Pending), strings.Join(shown, "; "), more)
}

// Wait watches the state and its switches (one list and one watch per
// source, the switches selected on the server: docs/kubectl-dynamic.md)
// until nothing is out of shape (OutOfShape), and returns how long that
// took and the last report; a *TimeoutError after the timeout. It looks
// again at every change the watches bring, so it returns as soon as the
// last status arrives, and makes no more requests the longer it waits.
// Followers a cluster state's grant does not admit are left out
// (Report.NotAdmitted). A list or watch that fails is retried, unless it
// was refused: a Forbidden ends the wait with a *PermissionError.
func Wait(ctx context.Context, c client.WithWatch, kinds []target.Kind, opts WaitOptions) (time.Duration, Report, error) {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	start := clk.Now()
	deadline := start.Add(opts.Timeout)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ref := v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: opts.State}
	if opts.Cluster {
		ref.Kind = v1beta1.StateKindCluster
	}
	syncCtx, stopSync := context.WithDeadline(ctx, deadline)
	defer stopSync()
	watched, err := newWatchedSnapshot(syncCtx, c, kinds, opts.Namespace, ref)
	if err != nil {
		if ctx.Err() != nil {
			return 0, Report{}, ctx.Err()
		}
		if transient(err) {
			return 0, Report{}, &TimeoutError{State: opts.State, Timeout: opts.Timeout, Pending: []string{fmt.Sprintf("the switches could not be listed before the timeout: %v", err)}}
		}
		return 0, Report{}, err
	}
	// An error of a list or watch either ends the wait at once (a
	// Forbidden, naming the permission) or is retried by the informers.
	synced, err := watched.start(ctx, syncCtx)
	if err != nil {
		return 0, Report{}, err
	}
	var report Report
	for {
		if synced {
			// The targets of a kind are watched once it has a follower.
			if synced, err = watched.startTargets(ctx, syncCtx); err != nil {
				return 0, Report{}, err
			}
		}
		if synced {
			// And the other states of the followers' lists, once one has.
			if synced, err = watched.startEntryStates(ctx, syncCtx); err != nil {
				return 0, Report{}, err
			}
		}
		if synced {
			snap, err := watched.snapshot()
			if err != nil {
				return 0, Report{}, err
			}
			now := clk.Now()
			snap.Now = now
			if report, err = Status(snap); err != nil {
				return 0, Report{}, err
			}
			pending := OutOfShape(snap, report, now, WaitFor{Accepted: opts.Accepted, Served: opts.Served})
			if len(pending) == 0 {
				return now.Sub(start), report, nil
			}
			if !now.Before(deadline) {
				return 0, report, &TimeoutError{State: opts.State, Timeout: opts.Timeout, Pending: pending, NotAdmitted: len(report.NotAdmitted)}
			}
		}
		now := clk.Now()
		if !now.Before(deadline) {
			why := "the state and its switches could not be read before the timeout"
			if err := watched.retriedError(); err != nil {
				why += fmt.Sprintf(" (the last error, retried: %v)", err)
			}
			return 0, report, &TimeoutError{State: opts.State, Timeout: opts.Timeout, Pending: []string{why}}
		}
		select {
		case <-ctx.Done():
			return 0, report, ctx.Err()
		case err := <-watched.failed:
			return 0, report, err
		case <-watched.changed:
		case <-clk.After(min(recheckEvery, deadline.Sub(now))):
		}
		synced = true
	}
}
