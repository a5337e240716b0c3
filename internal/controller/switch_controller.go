// Package controller holds the reconcilers: DynamicIngressState (the
// response of each state) and the switching engine that every kind of
// switch (DynamicIngress, DynamicHTTPRoute) runs through, each kind a small
// adapter of package target (docs/architecture.md).
package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
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

// SwitchReconciler is the switching engine: it makes each switch's target
// match the template its state selects. Kind adapts it to one kind of
// switch and target.
type SwitchReconciler struct {
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

	writes   *ownWrites
	applied  *appliedTargets
	metadata *metadataWrites
	// gate holds status writes back while a state change's target writes
	// are still to come; shared by every kind.
	gate *statusGate
	// announced has the switches announced when their target was written
	// whose status has not caught up yet.
	announced *announcedModes
	// fixed has when fixed states' spec changes were seen, for the switch
	// latency of switches that decide from the spec.
	fixed *fixedChanges
	// ClusterStates lets switches follow ClusterDynamicIngressStates: the
	// engine watches them and Namespaces' labels (Options.ClusterStates).
	ClusterStates bool
	// expressions evaluates expected expressions off the workers; nil
	// evaluates them in the reconcile.
	expressions *expressionEvaluator
	// queue is this controller's work queue, once it has started.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// NewSwitchReconciler returns the engine for one kind of switch.
func NewSwitchReconciler(mgr ctrl.Manager, kind target.Kind, clk clock.PassiveClock, maxConcurrent int, gate *statusGate) (*SwitchReconciler, error) {
	metadataWrites, err := newMetadataWrites(mgr)
	if err != nil {
		return nil, err
	}
	return &SwitchReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Recorder:                mgr.GetEventRecorder(kindName(kind) + "-controller"),
		Kind:                    kind,
		MaxConcurrentReconciles: maxConcurrent,
		Clock:                   clk,
		writes:                  newOwnWrites(clk),
		applied:                 newAppliedTargets(),
		metadata:                metadataWrites,
		gate:                    gate,
		announced:               newAnnouncedModes(),
		fixed:                   newFixedChanges(clk),
	}, nil
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
func (r *SwitchReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kind := r.Kind.SwitchKind()
	// Taken before anything is read: this reconcile counts as the one a
	// state change expected only if it began after that change was seen.
	ticket := r.gate.ticket()
	sw := r.Kind.NewSwitch()
	// The objects read from the cache here are the cache's own (no deep
	// copy: a flip reads hundreds of them at once), so nothing may change
	// them: writeStatus works on a copy of the status.
	if err := r.Get(ctx, req.NamespacedName, sw, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.gate.forget(kind, req.NamespacedName)
			r.writes.forget(sw, req.NamespacedName)
			r.applied.forget(req.NamespacedName)
			r.announced.forget(req.NamespacedName)
			if r.expressions != nil {
				r.expressions.forget(switchID{kind, req.NamespacedName})
			}
			metrics.ForgetTarget(kind, req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.writes.cacheHolds(sw) {
		// Deciding from a status this manager already replaced would
		// write it and announce the switch a second time.
		return ctrl.Result{RequeueAfter: r.writes.retryAfter(sw)}, nil
	}
	if !sw.GetDeletionTimestamp().IsZero() {
		// The garbage collector removes the target through its ownerReference.
		r.gate.forget(kind, req.NamespacedName)
		metrics.ForgetTarget(kind, sw.GetNamespace(), sw.GetName())
		return ctrl.Result{}, nil
	}

	state, why, err := r.getState(ctx, sw)
	if err != nil {
		r.gate.done(kind, req.NamespacedName, ticket)
		return ctrl.Result{}, err
	}
	state = decision.Followed(state, r.fixed.at(state))
	current, err := r.retainedMode(ctx, sw, state)
	if lag := (*cacheLagError)(nil); errors.As(err, &lag) {
		return ctrl.Result{RequeueAfter: lag.retryAfter}, nil
	}
	if err != nil {
		r.gate.done(kind, req.NamespacedName, ticket)
		return ctrl.Result{}, err
	}
	active, verdictPending := r.decide(sw, state, why, current, req)
	if verdictPending {
		// Its expression is evaluated in its namespace's turn, and the
		// switch reconciled again once the verdict is known; nothing
		// changes meanwhile.
		return ctrl.Result{RequeueAfter: verdictRecheck}, nil
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
	r.gate.done(kind, req.NamespacedName, ticket)
	ready := readyCondition(sw, why, active, result)
	metrics.SetActive(kind, sw.GetNamespace(), sw.GetName(), sw.SwitchSpec().State.Name, isActive)

	if wrote && syncErr == nil {
		// A flip fans out to every switch of the state: the targets are
		// what traffic sees, so each reconcile writes its target only, and
		// the status is written by a later reconcile that waits behind the
		// targets of the others (docs/benchmarks.md). The switch is
		// announced now: a state that flaps back before the status is
		// written changes the target twice and the status never.
		if switchedByWrite(sw, r.knownMode(sw, result.from), active) {
			r.announceSwitch(sw, state, active)
		}
		if held, atMost := r.gate.hold(kind, req.NamespacedName, true); held {
			// Other targets of the flip are still to be written: the
			// status waits for them without a reconcile in between.
			return ctrl.Result{RequeueAfter: atMost, Priority: ptr.To(handler.LowPriority)}, nil
		}
		return ctrl.Result{RequeueAfter: statusWriteDelay, Priority: ptr.To(handler.LowPriority)}, nil
	}

	status := nextStatus(sw, active, ready)
	_, pending := r.announced.mode(req.NamespacedName)
	toWrite := status != nil || pending
	if held, atMost := r.gate.hold(kind, req.NamespacedName, toWrite && syncErr == nil); held {
		// Enqueued again once the targets of the state change are written.
		return ctrl.Result{RequeueAfter: atMost, Priority: ptr.To(handler.LowPriority)}, nil
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
	for _, e := range events {
		r.event(ctx, sw, e)
	}
	if toWrite {
		r.gate.written(kind, req.NamespacedName)
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
// a flip are still to be written, it waits for them (statusGate.record).
// It names sw by reference, taken now: sw is the cache's object.
func (r *SwitchReconciler) event(ctx context.Context, sw target.Switch, e eventRecord) {
	regarding, err := reference.GetReference(r.Scheme(), sw)
	if err != nil {
		// Not in the scheme: the recorder could not name it either.
		ctrl.LoggerFrom(ctx).Error(err, "recording an event", "reason", e.reason)
		return
	}
	r.gate.record(r.Recorder, regarding, e)
}

// announceSwitch counts a switch, with its latency, when a target write
// changed the target's mode, and keeps its Switched event for when the
// status is settled (see announcedModes).
func (r *SwitchReconciler) announceSwitch(sw target.Switch, state *v1beta1.DynamicIngressState, active metav1.Condition) {
	isActive := active.Status == metav1.ConditionTrue
	latency, known := switchLatency(state, active, r.Clock.Now())
	metrics.RecordSwitch(r.Kind.SwitchKind(), sw.GetNamespace(), sw.GetName(), isActive, latency, known)
	r.announced.add(client.ObjectKeyFromObject(sw), isActive, switchedEvent(active))
}

// retainedMode is the mode the target is in now when the switch's mode
// depends on it (failurePolicy Retain while the state gives no answer),
// read from the target's shape (decision.Current); nil otherwise. The cache
// holds this manager's last write to the target (getTarget waits for it),
// so this is the mode the operator last wrote, and after a restart the mode
// the target shows.
func (r *SwitchReconciler) retainedMode(ctx context.Context, sw target.Switch, state *v1beta1.DynamicIngressState) (*bool, error) {
	key := target.Key(sw)
	if !decision.RetainsMode(sw, state) || key.Namespace != sw.GetNamespace() {
		// A target in another namespace is refused by syncTarget, unread.
		return nil, nil
	}
	live, err := r.getTarget(ctx, key)
	if err != nil {
		return nil, err
	}
	return decision.Current(r.Kind, sw, state, live, r.pendingMode(sw)), nil
}

// pendingMode is the mode of the switch's last announced target write that
// its status does not show yet, nil when there is none.
func (r *SwitchReconciler) pendingMode(sw target.Switch) *bool {
	if mode, ok := r.announced.mode(client.ObjectKeyFromObject(sw)); ok {
		return &mode
	}
	return nil
}

// knownMode is from, the mode a target's shape tells, or, when the shape
// tells nothing (a hand-edited target, or a template edited since the
// write), the mode of the switch's last announced target write that its
// status does not show yet; nil when neither is known, and the status then
// decides.
func (r *SwitchReconciler) knownMode(sw target.Switch, from *bool) *bool {
	if from != nil {
		return from
	}
	return r.pendingMode(sw)
}

// modeOf is the mode a live target (nil when there is none) is in, nil when
// its shape does not tell.
func (r *SwitchReconciler) modeOf(sw target.Switch, live client.Object) *bool {
	return decision.TargetMode(r.Kind, sw, live)
}

// getState returns the state the switch follows (spec.state or
// spec.stateRef), as the decisions read it: a DynamicIngressState in the
// switch's namespace, or the view of a ClusterDynamicIngressState whose
// grant admits the namespace. When there is none to follow it returns nil
// and why: the state does not exist, its grant does not admit the
// namespace, or this manager does not watch cluster states.
func (r *SwitchReconciler) getState(ctx context.Context, sw target.Switch) (*v1beta1.DynamicIngressState, *decision.Unfollowed, error) {
	ref := sw.SwitchSpec().State
	if !ref.IsCluster() {
		state := &v1beta1.DynamicIngressState{}
		err := r.Get(ctx, types.NamespacedName{Namespace: sw.GetNamespace(), Name: ref.Name}, state, client.UnsafeDisableDeepCopy)
		if apierrors.IsNotFound(err) {
			return nil, ptr.To(decision.NotFound(ref)), nil
		}
		if err != nil {
			return nil, nil, err
		}
		return state, nil, nil
	}
	if !r.ClusterStates {
		return nil, ptr.To(decision.ClusterStatesNotWatched(ref)), nil
	}
	state := &v1beta1.ClusterDynamicIngressState{}
	err := r.Get(ctx, types.NamespacedName{Name: ref.Name}, state, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil, ptr.To(decision.NotFound(ref)), nil
	}
	if err != nil {
		return nil, nil, err
	}
	labels, known, err := r.namespaceLabels(ctx, sw.GetNamespace())
	if err != nil {
		return nil, nil, err
	}
	if !known {
		// Unknown labels are not "no labels": a grant with NotIn or
		// DoesNotExist would admit them. Decided again when the
		// Namespace shows up (namespaceRelabelled).
		return nil, ptr.To(decision.NamespaceNotKnown(ref.Name, sw.GetNamespace())), nil
	}
	if msg := decision.NotAdmitted(ref.Name, state.Spec.Followers.Namespaces, sw.GetNamespace(), labels); msg != "" {
		return nil, &decision.Unfollowed{Reason: v1beta1.ReasonStateNotAdmitted, Message: msg}, nil
	}
	return state.StateView(), nil, nil
}

// namespaceLabels are the labels of a namespace, from the cache's
// metadata-only copy of Namespaces; known is false when the cache does not
// hold the namespace (not seen yet, or gone).
func (r *SwitchReconciler) namespaceLabels(ctx context.Context, name string) (labels map[string]string, known bool, err error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err = r.Get(ctx, types.NamespacedName{Name: name}, ns, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return ns.GetLabels(), err == nil, err
}

// syncTarget makes the target what the template of the mode says (absent
// when that mode has none), unless an object the switch does not control
// is there. It reports whether it wrote the target.
func (r *SwitchReconciler) syncTarget(ctx context.Context, sw target.Switch, active bool) (targetResult, bool, error) {
	log := ctrl.LoggerFrom(ctx)
	targetKind := r.Kind.TargetGVK().Kind
	key := target.Key(sw)
	if key.Namespace != sw.GetNamespace() {
		// The webhook refuses this; without it, writing into another
		// namespace would reach past what the user may change, and an
		// ownerReference across namespaces makes the collector delete the
		// target.
		return targetResult{reason: v1beta1.ReasonApplyFailed,
			message: fmt.Sprintf("spec.target.namespace %q is not the %s's own namespace %q; nothing was written", key.Namespace, r.Kind.SwitchKind(), sw.GetNamespace())}, false, nil
	}
	if other, err := r.firstClaimant(ctx, sw); err != nil || other != "" {
		if err != nil {
			return unwritten(applyFailed(fmt.Errorf("listing the %ss of %s %s: %w", r.Kind.SwitchKind(), targetKind, key, err)))
		}
		return targetResult{reason: v1beta1.ReasonTargetConflict,
			message: fmt.Sprintf("%s %q already targets %s %s; this one leaves it alone", r.Kind.SwitchKind(), other, targetKind, key)}, false, nil
	}
	existing, err := r.getTarget(ctx, key)
	if err != nil {
		if lag := (*cacheLagError)(nil); errors.As(err, &lag) {
			return targetResult{}, false, err
		}
		return unwritten(applyFailed(fmt.Errorf("reading %s %s: %w", targetKind, key, err)))
	}
	if existing != nil && !metav1.IsControlledBy(existing, sw) {
		return targetResult{reason: v1beta1.ReasonTargetConflict,
			message: fmt.Sprintf("%s %s exists and is not controlled by this %s; it is left untouched", targetKind, key, r.Kind.SwitchKind())}, false, nil
	}

	mode := decision.ModeName(active)
	swKey := client.ObjectKeyFromObject(sw)
	rendered := renderedFromSwitch(sw, active)
	if existing != nil && r.applied.holds(swKey, existing.GetResourceVersion(), rendered) {
		// The target is still as our last apply of this very body left
		// it: the reconcile that writes the status after a flip knows it
		// without rendering anything.
		return unwritten(synced("%s %s follows the %s template", targetKind, key, mode))
	}
	if existing != nil && !hasUpdateEntry(existing, v1beta1.FieldOwner) {
		// A flip back: the target is as our last apply of the other mode
		// left it, and the body of this mode we applied before is kept
		// for what the switch renders from now and for this target. It is
		// applied again without rendering.
		if from := r.applied.modeAt(swKey, existing.GetResourceVersion(), rendered); from != nil {
			if body := r.applied.body(swKey, rendered, existing.GetUID()); body != nil {
				return r.applyTarget(ctx, swKey, key, existing, body, rendered, from)
			}
		}
	}
	desired, err := target.Render(r.Kind, sw, active)
	if err != nil {
		return unwritten(applyFailed(err))
	}
	if desired == nil {
		if existing == nil || !existing.GetDeletionTimestamp().IsZero() {
			return unwritten(synced("No %s in %s mode", targetKind, mode))
		}
		from := r.modeOf(sw, existing)
		uid, rv := existing.GetUID(), existing.GetResourceVersion()
		err := r.Delete(ctx, existing, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		if err != nil && !apierrors.IsNotFound(err) {
			return unwritten(applyFailed(fmt.Errorf("deleting %s %s: %w", targetKind, key, err)))
		}
		r.writes.deleted(existing)
		log.Info("Deleted "+targetKind, "target", key, "mode", mode)
		return writtenFrom(from)(synced("No %s in %s mode", targetKind, mode))
	}

	if existing == nil {
		result, err := r.createTarget(ctx, key, desired, mode)
		result.from = r.modeOf(sw, nil)
		return result, err == nil && result.reason == v1beta1.ReasonSynced, err
	}
	if hasUpdateEntry(existing, v1beta1.FieldOwner) {
		// The hand-over rewrites the whole managedFields list, of which the
		// cache keeps our field owner's entries only (stripTarget): it
		// starts from the target as the API server has it.
		fresh := r.Kind.NewTarget()
		if err := r.APIReader.Get(ctx, key, fresh); err != nil {
			return unwritten(applyFailed(fmt.Errorf("reading %s %s: %w", targetKind, key, err)))
		}
		existing = fresh
	}
	if existing, err = r.ownCreatedFields(ctx, existing); err != nil {
		return unwritten(applyFailed(fmt.Errorf("taking over the fields of %s %s: %w", targetKind, key, err)))
	}
	body, err := applyBody(desired, existing.GetUID())
	if err != nil {
		return unwritten(applyFailed(fmt.Errorf("encoding %s %s: %w", targetKind, key, err)))
	}
	// A target still as our last apply of the other mode left it is out
	// of date (a flip): no need to compare. Anything else is compared.
	from := r.applied.modeAt(swKey, existing.GetResourceVersion(), rendered)
	if from == nil {
		upToDate, err := target.UpToDate(r.Kind, existing, desired)
		if err != nil {
			return unwritten(applyFailed(err))
		}
		if upToDate {
			return unwritten(synced("%s %s follows the %s template", targetKind, key, mode))
		}
		from = r.modeOf(sw, existing)
	}
	return r.applyTarget(ctx, swKey, key, existing, body, rendered, from)
}

// applyTarget applies body, rendered from rendered for the switch at
// swKey, to existing, its target at key, found in the mode from; it keeps
// the body for the next flip back to this mode.
func (r *SwitchReconciler) applyTarget(ctx context.Context, swKey, key types.NamespacedName, existing client.Object, body []byte, rendered renderedFrom, from *bool) (targetResult, bool, error) {
	targetKind := r.Kind.TargetGVK().Kind
	mode := decision.ModeName(rendered.active)
	rv, err := r.metadata.apply(ctx, r.Kind.TargetGVK(), key, body, v1beta1.FieldOwner)
	if err != nil {
		return unwritten(applyFailed(fmt.Errorf("applying %s %s: %w", targetKind, key, err)))
	}
	r.applied.record(swKey, rendered, rv)
	r.applied.keep(swKey, rendered, existing.GetUID(), body)
	if rv == existing.GetResourceVersion() {
		// The server found nothing to change (a default it fills in that
		// the kind's adapter did not know): nothing was written.
		return unwritten(synced("%s %s follows the %s template", targetKind, key, mode))
	}
	r.wroteTarget(key, rv)
	ctrl.LoggerFrom(ctx).Info("Updated "+targetKind, "target", key, "mode", mode)
	return writtenFrom(from)(synced("%s %s follows the %s template", targetKind, key, mode))
}

// preconditionFailed reports whether err is the API server refusing a
// write to the target because the target is not the one the cache showed:
// a conflict (its resourceVersion or UID moved, or it is gone), or
// targetReplaced.
func preconditionFailed(err error) bool {
	return apierrors.IsConflict(err) || targetReplaced(err)
}

// targetReplaced reports whether err is the API server's answer to an
// apply whose UID precondition names a target that was deleted and
// created again under the same name since the cache showed it: not a
// conflict but 422 Invalid, every cause "metadata.uid: field is
// immutable". Whether the new object is ours to write is decided afresh
// once the cache shows it: one the switch does not control is left alone
// (TargetConflict).
func targetReplaced(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	if details == nil || len(details.Causes) == 0 {
		return false
	}
	for _, cause := range details.Causes {
		if cause.Field != "metadata.uid" {
			return false
		}
	}
	return true
}

// applyBody encodes the rendered target for an apply, with uid as a
// precondition: the apply fails rather than touch a target that replaced
// ours since it was read. desired is left as it is.
func applyBody(desired *unstructured.Unstructured, uid types.UID) ([]byte, error) {
	obj := maps.Clone(desired.Object)
	metadata, _ := obj["metadata"].(map[string]any)
	metadata = maps.Clone(metadata)
	if metadata == nil {
		metadata = map[string]any{}
	}
	metadata["uid"] = string(uid)
	obj["metadata"] = metadata
	return json.Marshal(obj)
}

// createTarget creates the target with a plain create, which fails when an
// object of that name appeared since it was read, where an apply would
// take that object over. The created fields then move to the apply field
// owner, so that later applies can remove them.
func (r *SwitchReconciler) createTarget(ctx context.Context, key types.NamespacedName, desired *unstructured.Unstructured, mode string) (targetResult, error) {
	targetKind := r.Kind.TargetGVK().Kind
	if err := r.Create(ctx, desired, client.FieldOwner(v1beta1.FieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return targetResult{reason: v1beta1.ReasonTargetConflict,
				message: fmt.Sprintf("%s %s was created by someone else; it is left untouched", targetKind, key)}, nil
		}
		return applyFailed(fmt.Errorf("creating %s %s: %w", targetKind, key, err))
	}
	r.wroteTarget(key, desired.GetResourceVersion())
	ctrl.LoggerFrom(ctx).Info("Created "+targetKind, "target", key, "mode", mode)
	if _, err := r.ownCreatedFields(ctx, desired); err != nil {
		return applyFailed(fmt.Errorf("taking over the fields of %s %s: %w", targetKind, key, err))
	}
	return synced("%s %s follows the %s template", targetKind, key, mode)
}

// ownCreatedFields moves the fields that our create set (an Update entry
// of our field owner) to our apply entry, guarded by resourceVersion. It
// returns the target as it is afterwards.
func (r *SwitchReconciler) ownCreatedFields(ctx context.Context, obj client.Object) (client.Object, error) {
	if !hasUpdateEntry(obj, v1beta1.FieldOwner) {
		// The common case, decided without decoding managedFields.
		return obj, nil
	}
	// obj is the cache's own: the upgrade rewrites the managedFields
	// entries it is given, so it works on a copy.
	obj = obj.DeepCopyObject().(client.Object)
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(v1beta1.FieldOwner), v1beta1.FieldOwner)
	if err != nil || patch == nil {
		return obj, err
	}
	if err := r.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return nil, err
	}
	r.wroteTarget(client.ObjectKeyFromObject(obj), obj.GetResourceVersion())
	return obj, nil
}

// hasUpdateEntry reports whether manager owns fields of obj through an
// Update (a create or an update, not an apply).
func hasUpdateEntry(obj client.Object, manager string) bool {
	for _, entry := range obj.GetManagedFields() {
		if entry.Manager == manager && entry.Operation == metav1.ManagedFieldsOperationUpdate {
			return true
		}
	}
	return false
}

// wroteTarget records a write that left the target at key at
// resourceVersion, under the typed kind the cache holds it as.
func (r *SwitchReconciler) wroteTarget(key types.NamespacedName, resourceVersion string) {
	r.writes.wroteVersion(r.Kind.NewTarget(), key, resourceVersion)
}

// writtenFrom and unwritten add to a result whether the target was
// written, and from which mode.
func writtenFrom(from *bool) func(targetResult, error) (targetResult, bool, error) {
	return func(result targetResult, err error) (targetResult, bool, error) {
		result.from = from
		return result, true, err
	}
}

func unwritten(result targetResult, err error) (targetResult, bool, error) { return result, false, err }

func synced(format string, args ...any) (targetResult, error) {
	return targetResult{reason: v1beta1.ReasonSynced, message: fmt.Sprintf(format, args...)}, nil
}

func applyFailed(err error) (targetResult, error) {
	return targetResult{reason: v1beta1.ReasonApplyFailed, message: err.Error()}, err
}

// cacheLagError says the cache does not hold the manager's own last write
// to an object yet: the reconcile is to be retried after retryAfter.
type cacheLagError struct {
	retryAfter time.Duration
}

func (e *cacheLagError) Error() string { return "the cache does not hold the last write yet" }

// getTarget reads the target from the cache and, when the cache has no
// such managed object, from the API server. It returns nil when there is
// none, and a *cacheLagError when the cache shows an object older than this
// manager's last write to it.
func (r *SwitchReconciler) getTarget(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	obj := r.Kind.NewTarget()
	err := r.Get(ctx, key, obj, client.UnsafeDisableDeepCopy)
	if err == nil && !r.writes.cacheHolds(obj) {
		return nil, &cacheLagError{retryAfter: r.writes.retryAfter(obj)}
	}
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		r.writes.forget(obj, key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// firstClaimant names another switch of this kind in the namespace that
// names the same target and was there first (the admission webhook
// refuses a second one; this holds when two were created at the same
// moment, or without the webhook). "" when there is none.
func (r *SwitchReconciler) firstClaimant(ctx context.Context, sw target.Switch) (string, error) {
	list := r.Kind.NewSwitchList()
	if err := r.List(ctx, list, client.InNamespace(sw.GetNamespace()),
		client.MatchingFields{index.Target: sw.SwitchSpec().Target.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return "", err
	}
	return firstClaimant(r.Kind.SwitchItems(list), sw), nil
}

// nextStatus is the switch's status with both conditions set, nil when
// that is the status it has.
func nextStatus(sw target.Switch, active, ready metav1.Condition) *v1beta1.SwitchStatus {
	before := sw.SwitchStatus()
	// sw is the cache's own object: the new status is a copy.
	status := before.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, active)
	meta.SetStatusCondition(&status.Conditions, ready)
	status.ObservedGeneration = sw.GetGeneration()
	if equality.Semantic.DeepEqual(before, status) {
		return nil
	}
	return status
}

// writeStatus writes status (nothing when nil) and records events for the
// transitions. It reports whether the status it wrote is a switch between
// active and passive that was not announced already when the target was
// written (announced).
func (r *SwitchReconciler) writeStatus(ctx context.Context, sw target.Switch, status *v1beta1.SwitchStatus, announced bool) (bool, error) {
	if status == nil {
		return false, nil
	}
	before := sw.SwitchStatus()
	patch, err := statusMergePatch(before, status)
	if err != nil {
		return false, err
	}
	rv, err := r.metadata.patchStatus(ctx, v1beta1.GroupVersion.WithKind(r.Kind.SwitchKind()), client.ObjectKeyFromObject(sw), patch)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	r.writes.wroteVersion(sw, client.ObjectKeyFromObject(sw), rv)

	prevActive := meta.FindStatusCondition(before.Conditions, v1beta1.ConditionActive)
	prevReady := meta.FindStatusCondition(before.Conditions, v1beta1.ConditionReady)
	active := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionActive)
	ready := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionReady)
	for _, e := range transitionEvents(prevActive, prevReady, *active, *ready, announced) {
		r.event(ctx, sw, e)
	}
	return prevActive != nil && prevActive.Status != active.Status && !announced, nil
}

// statusMergePatch is the JSON merge patch that turns the status before
// into after: what client.MergeFrom would send for a change of the status
// alone, without encoding the rest of the object twice.
func statusMergePatch(before, after *v1beta1.SwitchStatus) ([]byte, error) {
	from, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	to, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	diff, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]json.RawMessage{"status": diff})
}

// SetupWithManager registers the engine for its kind. Call index.Setup
// first.
func (r *SwitchReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(r.Kind.NewSwitch(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(r.Kind.NewTarget(), targetChanged(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			r.Kind.NewSwitch(), handler.OnlyControllerOwner())), builder.WithPredicates(r.notAnEchoOfOurApply())).
		Watches(&v1beta1.DynamicIngressState{}, r.stateChanged(), builder.WithPredicates(responseChanged()))
	if r.ClusterStates {
		// A cluster state's followers, and the followers in a namespace
		// whose labels changed: the grant decides again (getState).
		b = b.Watches(&v1beta1.ClusterDynamicIngressState{}, r.stateChanged(), builder.WithPredicates(responseChanged())).
			WatchesMetadata(&corev1.Namespace{}, r.namespaceRelabelled(), builder.WithPredicates(labelsChanged()))
	}
	return b.WatchesRawSource(source.Func(r.releaseHeld)).WatchesRawSource(source.Func(r.keepQueue)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, RateLimiter: retryRateLimiter(),
			LogConstructor: reconcileLogger(mgr, kindName(r.Kind), r.Kind.SwitchKind())}).
		Named(kindName(r.Kind)).
		Complete(r)
}

// releaseHeld has the status gate enqueue the switches it held in q, at
// low priority: the source that hands the gate this controller's queue.
func (r *SwitchReconciler) releaseHeld(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	q = lowPriority(q)
	r.gate.register(r.Kind.SwitchKind(), func(key types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: key}) })
	return nil
}

// keepQueue keeps this controller's queue, for wake: the source that hands
// it over.
func (r *SwitchReconciler) keepQueue(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	r.queue.Store(&q)
	return nil
}

// wake returns what enqueues req again.
func (r *SwitchReconciler) wake(req ctrl.Request) func() {
	return func() {
		if q := r.queue.Load(); q != nil {
			(*q).Add(req)
		}
	}
}

// targetChanged enqueues the switch controlling a target that changed at
// low priority: during a flip, the reconciles that write targets go first,
// and those that these events cause (the status of a switch whose target
// was just written) wait behind them.
func targetChanged(h handler.EventHandler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, e, lowPriority(q))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, e, lowPriority(q))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, e, lowPriority(q))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Generic(ctx, e, lowPriority(q))
		},
	}
}

// notAnEchoOfOurApply drops the update of a target that only shows this
// manager's last apply to it (the target is at the resourceVersion that
// apply returned). The reconcile that applied it has already asked to be
// run again, for the status (see Reconcile), so the event would only add
// a reconcile; during a flip there is one per target, finding the status
// held and competing with the target writes still to come
// (docs/benchmarks.md). Every other change of a target (someone else's
// write, a delete, or anything after a restart) passes.
func (r *SwitchReconciler) notAnEchoOfOurApply() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		owner := metav1.GetControllerOfNoCopy(e.ObjectNew)
		if owner == nil || owner.Kind != r.Kind.SwitchKind() || owner.APIVersion != v1beta1.GroupVersion.String() {
			return true
		}
		key := types.NamespacedName{Namespace: e.ObjectNew.GetNamespace(), Name: owner.Name}
		_, ours := r.applied.last(key, e.ObjectNew.GetResourceVersion())
		return !ours
	}}
}

// lowPriority makes q add at handler.LowPriority, when it is a priority
// queue.
func lowPriority(q workqueue.TypedRateLimitingInterface[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		return lowPriorityQueue{pq}
	}
	return q
}

type lowPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (q lowPriorityQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, item)
}

// stateChanged enqueues the switches of a state that changed, each one
// expected by the status gate first. It lists them once per event (from
// the new object of an update: a state's name does not change), and adds
// at low priority what the cache's first list or a resync delivers.
func (r *SwitchReconciler) stateChanged() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.Object, q, e.IsInInitialList)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.ObjectNew, q, e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion())
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.Object, q, false)
			r.fixed.forget(client.ObjectKeyFromObject(e.Object))
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueSwitchesOf(ctx, e.Object, q, false)
		},
	}
}

// enqueueSwitchesOf adds every switch of this kind that state drives to q.
func (r *SwitchReconciler) enqueueSwitchesOf(ctx context.Context, state client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], low bool) {
	r.fixed.note(state)
	if low {
		q = lowPriority(q)
	}
	expectAndAdd(r.gate, r.Kind.SwitchKind(), r.switchesOf(ctx, state), q)
}

// expectAndAdd has the gate expect every switch of kind at keys, all at
// once, and then adds them to q: each reconcile counts, and none can empty
// the gate before the last is expected.
func expectAndAdd(gate *statusGate, kind string, keys []types.NamespacedName, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	gate.expect(kind, keys...)
	for _, key := range keys {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}

// switchesOf lists the switches of this kind that a state drives: a
// DynamicIngressState's in its namespace, a ClusterDynamicIngressState's
// in every namespace.
func (r *SwitchReconciler) switchesOf(ctx context.Context, state client.Object) []types.NamespacedName {
	list := r.Kind.NewSwitchList()
	selection := []client.ListOption{client.InNamespace(state.GetNamespace()), client.MatchingFields{index.State: state.GetName()}}
	if _, cluster := state.(*v1beta1.ClusterDynamicIngressState); cluster {
		selection = []client.ListOption{client.MatchingFields{index.ClusterState: state.GetName()}}
	}
	if err := r.List(ctx, list, append(selection, client.UnsafeDisableDeepCopy)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the switches of a state", "kind", r.Kind.SwitchKind(), "state", client.ObjectKeyFromObject(state))
		return nil
	}
	items := r.Kind.SwitchItems(list)
	keys := make([]types.NamespacedName, 0, len(items))
	for _, sw := range items {
		keys = append(keys, client.ObjectKeyFromObject(sw))
	}
	return keys
}

// responseChanged passes state creations and deletions, and updates that
// change the response switches compare with (followedResponse: a fixed
// state's spec, so that its switches are enqueued by the spec change
// itself, and not again by the status write that follows it) or, for a
// cluster state, its grant; a state's condition changing alone does not
// concern them.
func responseChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(stateObject)
			after, ok2 := e.ObjectNew.(stateObject)
			if !ok1 || !ok2 {
				return true
			}
			code0, body0 := decision.FollowedResponse(before.StateView())
			code1, body1 := decision.FollowedResponse(after.StateView())
			return code0 != code1 || body0 != body1 || grantChanged(e.ObjectOld, e.ObjectNew)
		},
	}
}

// grantChanged says whether a cluster state's spec.followers changed.
func grantChanged(before, after client.Object) bool {
	c0, ok1 := before.(*v1beta1.ClusterDynamicIngressState)
	c1, ok2 := after.(*v1beta1.ClusterDynamicIngressState)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(c0.Spec.Followers, c1.Spec.Followers)
}

// labelsChanged passes the creation of a Namespace (its labels become
// known) and the updates that change its labels, which a cluster state's
// grant reads.
func labelsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

// namespaceRelabelled enqueues the switches of this kind that follow a
// cluster state in a namespace whose labels changed or became known (it
// was created, or the manager's cache first listed it), each expected by
// the status gate first, as a flip's: the grant may now admit them, or no
// longer.
func (r *SwitchReconciler) namespaceRelabelled() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueClusterFollowers(ctx, e.Object.GetName(), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueClusterFollowers(ctx, e.ObjectNew.GetName(), q)
		},
	}
}

// enqueueClusterFollowers enqueues the switches of this kind in namespace
// that follow a cluster state, each expected by the status gate first.
func (r *SwitchReconciler) enqueueClusterFollowers(ctx context.Context, namespace string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	list := r.Kind.NewSwitchList()
	if err := r.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		if strings.Contains(err.Error(), "unknown namespace for the cache") {
			// A manager started with --namespaces watches every
			// Namespace's labels but the switches of its namespaces only;
			// controller-runtime's multi-namespace cache says so in words,
			// not by an error type.
			return
		}
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the switches of a namespace", "kind", r.Kind.SwitchKind(), "namespace", namespace)
		return
	}
	var keys []types.NamespacedName
	for _, sw := range r.Kind.SwitchItems(list) {
		if sw.SwitchSpec().State.IsCluster() {
			keys = append(keys, client.ObjectKeyFromObject(sw))
		}
	}
	expectAndAdd(r.gate, r.Kind.SwitchKind(), keys, q)
}
