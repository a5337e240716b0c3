// Package switches is the switching engine that every kind of switch
// (DynamicIngress, DynamicHTTPRoute) runs through, each kind a small
// adapter of package target: it makes each switch's target match the
// template its state selects, then writes the switch's status. It uses the
// shared machinery below it (flip, served, evaluate, writes, follow) and
// imports no other reconciler (docs/architecture.md).
package switches

import (
	"context"
	"errors"
	"runtime/trace"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/evaluate"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/flip"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/served"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/writes"
)

// ConflictRecheckInterval is how often a switch whose target name is taken
// by an object it does not control looks again. Such an object may lack
// the managed-by label, so the manager's cache does not see it go.
const ConflictRecheckInterval = time.Minute

// conflictRetryDelay is how soon a switch is synced again when its target
// changed between the read and the write.
const conflictRetryDelay = 200 * time.Millisecond

// statusWriteDelay is how soon a switch whose target was just written is
// reconciled again to write its status; its low priority puts it behind
// the target writes of the same flip anyway.
const statusWriteDelay = time.Millisecond

// Reconciler is the switching engine: it makes each switch's target
// match the template its state selects. Kind adapts it to one kind of
// switch and target.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache, which holds only managed targets,
	// so an unmanaged object at the target name is seen.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Kind      target.Kind
	// MaxConcurrentReconciles bounds how many switches are synced at once;
	// a state flip fans out to all of its switches.
	MaxConcurrentReconciles int
	// Clock times switches, for the switch latency metric.
	Clock clock.PassiveClock

	writes   *writes.OwnWrites
	applied  *writes.AppliedTargets
	metadata *writes.MetadataWrites
	// gate holds status writes back while a state change's target writes
	// are still to come; shared by every kind.
	gate *flip.Gate
	// announced has the switches announced when their target was written
	// whose status has not caught up yet.
	announced *announcedModes
	// fixed has when fixed states' spec changes were seen, for the switch
	// latency of switches that decide from the spec.
	fixed *fixedChanges
	// pinEnds wakes the switches whose pins end, through the gate.
	pinEnds *pinEnds
	// ClusterStates lets switches follow ClusterDynamicIngressStates: the
	// engine watches them and Namespaces' labels (Options.ClusterStates).
	ClusterStates bool
	// Expressions evaluates expected Expressions off the workers; nil
	// evaluates them in the reconcile.
	Expressions *evaluate.Evaluator
	// Served checks spec.Served after target writes; nil checks nothing.
	Served *served.Checks
	// Flips follows each state change until its followers show it; nil
	// follows none.
	Flips *flip.Tracker
	// Working, when set, is called at the start of every reconcile: work
	// begins (memory.Rest.Wake puts the collector's target back).
	Working func()
	// queue is this controller's work queue, once it has started.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// NewReconciler returns the engine for one kind of switch.
func NewReconciler(mgr ctrl.Manager, kind target.Kind, clk clock.WithDelayedExecution, maxConcurrent int, gate *flip.Gate) (*Reconciler, error) {
	metadataWrites, err := writes.NewMetadataWrites(mgr)
	if err != nil {
		return nil, err
	}
	r := &Reconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder(kindName(kind) + "-controller"),
		Kind:                    kind,
		MaxConcurrentReconciles: maxConcurrent,
		Clock:                   clk,
		writes:                  writes.NewOwnWrites(clk),
		applied:                 writes.NewAppliedTargets(),
		metadata:                metadataWrites,
		gate:                    gate,
		announced:               newAnnouncedModes(),
		fixed:                   newFixedChanges(clk),
	}
	r.pinEnds = newPinEnds(clk, r.pinsEnded)
	return r, nil
}

// pinsEnded has the gate expect the switches whose pins ended together,
// and enqueues them: their statuses wait for their targets, as in a state
// change's flip.
func (r *Reconciler) pinsEnded(keys []types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		r.gate.ExpectAndAdd(r.Kind.SwitchKind(), keys, *q)
	}
}

// kindName is the switch kind in lower case, to name controllers.
func kindName(kind target.Kind) string {
	return strings.ToLower(kind.SwitchKind())
}

// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingresses;dynamichttproutes,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingresses/status;dynamichttproutes/status,verbs=patch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingresses/finalizers;dynamichttproutes/finalizers,verbs=update
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressstates,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=httproutes.gateway.networking.k8s.io,verbs=get
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=clusterdynamicingressstates,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads the switch and its state, syncs the target and writes
// the status when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer trace.StartRegion(ctx, regions.SwitchReconcile).End()
	if r.Working != nil {
		r.Working()
	}
	kind := r.Kind.SwitchKind()
	// Taken before anything is read: this reconcile counts as the one a
	// state change expected only if it began after that change was seen.
	ticket := r.gate.Ticket()
	sw := r.Kind.NewSwitch()
	// The objects read from the cache here are the cache's own (no deep
	// copy: a flip reads hundreds of them at once), so nothing may change
	// them: writeStatus works on a copy of the status.
	if err := r.Get(ctx, req.NamespacedName, sw, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.gate.Forget(kind, req.NamespacedName)
			r.writes.Forget(sw, req.NamespacedName)
			r.applied.Forget(req.NamespacedName)
			r.announced.forget(req.NamespacedName)
			if r.Expressions != nil {
				r.Expressions.Forget(target.SwitchID{Kind: kind, Key: req.NamespacedName})
			}
			if r.Served != nil {
				r.Served.Forget(target.SwitchID{Kind: kind, Key: req.NamespacedName})
			}
			r.Flips.Forget(target.SwitchID{Kind: kind, Key: req.NamespacedName})
			r.pinEnds.set(req.NamespacedName, time.Time{})
			metrics.ForgetTarget(kind, req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.writes.CacheHolds(sw) {
		// Deciding from a status this manager already replaced would
		// write it and announce the switch a second time.
		return ctrl.Result{RequeueAfter: r.writes.RetryAfter(sw)}, nil
	}
	if !sw.GetDeletionTimestamp().IsZero() {
		// The garbage collector removes the target through its ownerReference.
		r.gate.Forget(kind, req.NamespacedName)
		metrics.ForgetTarget(kind, sw.GetNamespace(), sw.GetName())
		return ctrl.Result{}, nil
	}

	// A pin decides only while it holds: an expired one is decided from
	// spec and the clock at every reconcile, and the switch is woken when
	// it ends (docs/behaviour.md, "Pins that end").
	f, err := r.resolve(ctx, sw)
	if err != nil {
		r.gate.Done(kind, req.NamespacedName, ticket)
		return ctrl.Result{}, err
	}
	// A pin that waits for approval under a followed state's policy does
	// not hold either (docs/behaviour.md, "Approval").
	policy := pinPolicy(sw.SwitchSpec(), f)
	pin := decision.KeepInEffect(decision.PinOf(sw, policy, r.Clock.Now()), sw.SwitchStatus().Override)
	decided := target.Switch(sw)
	if pin.Status != nil && !pin.Holds() {
		decided = decision.Unpinned(sw)
	}
	if pin.EndsIn > 0 {
		r.pinEnds.set(req.NamespacedName, sw.SwitchSpec().OverrideUntil.Time)
	} else {
		r.pinEnds.set(req.NamespacedName, time.Time{})
	}
	current, err := r.retainedMode(ctx, decided, f)
	if lag := (*cacheLagError)(nil); errors.As(err, &lag) {
		return ctrl.Result{RequeueAfter: lag.retryAfter}, nil
	}
	if err != nil {
		r.gate.Done(kind, req.NamespacedName, ticket)
		return ctrl.Result{}, err
	}
	active, entries, verdictPending := r.decide(decided, f, current, req)
	if verdictPending {
		// Its expression is evaluated in its namespace's turn, and the
		// switch reconciled again once the verdict is known; nothing
		// changes meanwhile.
		return ctrl.Result{RequeueAfter: evaluate.VerdictRecheck}, nil
	}
	if awaits := pin.AwaitsApproval(); awaits != "" {
		active.Message += "; " + awaits
	}
	isActive := active.Status == metav1.ConditionTrue
	result, wrote, syncErr := r.syncTarget(ctx, sw, isActive)
	if lag := (*cacheLagError)(nil); errors.As(syncErr, &lag) {
		return ctrl.Result{RequeueAfter: lag.retryAfter}, nil
	}
	if preconditionFailed(syncErr) {
		// The target changed since the cache showed it (a precondition
		// failed): look again soon rather than report a failure.
		return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
	}
	r.gate.Done(kind, req.NamespacedName, ticket)
	ready := readyCondition(sw, f.why, active, result)
	if pin.Holds() && ready.Status == metav1.ConditionTrue {
		if msg := pinBreaks(sw.SwitchSpec(), policy, pin, r.Clock.Now()); msg != "" {
			ready.Message = msg
		}
	}
	metrics.SetActive(kind, sw.GetNamespace(), sw.GetName(), stateLabel(sw.SwitchSpec()), isActive)

	if wrote && syncErr == nil {
		// A flip fans out to every switch of the state: the targets are
		// what traffic sees, so each reconcile writes its target only, and
		// the status is written by a later reconcile that waits behind the
		// targets of the others (docs/benchmarks.md). The switch is
		// announced now: a state that flaps back before the status is
		// written changes the target twice and the status never.
		if switchedByWrite(sw, r.knownMode(sw, result.from), active) {
			r.announceSwitch(sw, f.latest(), active)
		}
		r.checkServed(sw, req, isActive)
		if held, atMost := r.gate.Hold(kind, req.NamespacedName, true); held {
			// Other targets of the flip are still to be written: the
			// status waits for them without a reconcile in between.
			return ctrl.Result{RequeueAfter: atMost, Priority: ptr.To(handler.LowPriority)}, nil
		}
		return ctrl.Result{RequeueAfter: statusWriteDelay, Priority: ptr.To(handler.LowPriority)}, nil
	}

	status := nextStatus(sw, active, ready, entries, r.servedView(ctx, sw, req, isActive), pin.Status)
	_, pending := r.announced.mode(req.NamespacedName)
	toWrite := status != nil || pending
	if held, atMost := r.gate.Hold(kind, req.NamespacedName, toWrite && syncErr == nil); held {
		// Enqueued again once the targets of the state change are written.
		return ctrl.Result{RequeueAfter: atMost, Priority: ptr.To(handler.LowPriority)}, nil
	}
	if wait := r.servedHold(req, isActive, toWrite && syncErr == nil); wait > 0 {
		// Its check wakes it once decided; the events of its namespace
		// wait for its status meanwhile (the gate counts it unwritten).
		return ctrl.Result{RequeueAfter: wait, Priority: ptr.To(handler.LowPriority)}, nil
	}
	// The status now catches up with the target: the switches its writes
	// made are announced, and not again by the status.
	// They are forgotten only once the status is written: a failed write
	// is retried with them still pending, and announces nothing twice.
	events, announced := r.announced.peek(req.NamespacedName, isActive)
	switched, err := r.writeStatus(ctx, sw, status, announced)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.announced.forget(req.NamespacedName)
	r.settleFlips(sw, f, req)
	for _, e := range events {
		r.event(ctx, sw, e)
	}
	if toWrite {
		r.gate.Written(kind, req.NamespacedName)
	}
	if switched {
		// A switch without a target write (the target is not ours, or was
		// written before a restart): no latency to tell.
		metrics.RecordSwitch(kind, sw.GetNamespace(), sw.GetName(), isActive, 0, false)
	}
	if syncErr != nil {
		return ctrl.Result{}, syncErr
	}
	if result.reason == v1beta1.ReasonTargetConflict {
		return ctrl.Result{RequeueAfter: ConflictRecheckInterval}, nil
	}
	return ctrl.Result{}, nil
}

// event records e about sw through the status gate: while the statuses of
// a flip are still to be written, it waits for them (flip.Gate.Record).
// It names sw by reference, taken now: sw is the cache's object.
func (r *Reconciler) event(ctx context.Context, sw target.Switch, e flip.Event) {
	regarding, err := reference.GetReference(r.Scheme(), sw)
	if err != nil {
		// Not in the scheme: the recorder could not name it either.
		ctrl.LoggerFrom(ctx).Error(err, "recording an event", "reason", e.Reason)
		return
	}
	r.gate.Record(r.Recorder, regarding, e)
}

// announceSwitch counts a switch, with its latency, when a target write
// changed the target's mode, and keeps its Switched event for when the
// status is settled (see announcedModes).
func (r *Reconciler) announceSwitch(sw target.Switch, state *v1beta1.DynamicIngressState, active metav1.Condition) {
	isActive := active.Status == metav1.ConditionTrue
	latency, known := switchLatency(state, active, r.Clock.Now())
	metrics.RecordSwitch(r.Kind.SwitchKind(), sw.GetNamespace(), sw.GetName(), isActive, latency, known)
	r.announced.add(client.ObjectKeyFromObject(sw), isActive, switchedEvent(active))
}

// stateLabel is the state label of a switch's metrics: the state it
// follows, or for a list its form, as the STATE column shows it
// (anyOf(2)): an entry deciding now and another later would otherwise
// make a new series at each flip.
func stateLabel(spec v1beta1.SwitchSpec) string {
	if spec.Combination() == v1beta1.CombinationSingle {
		return spec.State.Name
	}
	return spec.Summary()
}
