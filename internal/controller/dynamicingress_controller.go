// Package controller holds the two reconcilers: DynamicIngressState (the
// response of each state) and DynamicIngress (the target Ingress of each).
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/ingress"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
)

// ConflictRecheckInterval is how often a DynamicIngress whose target name is
// taken by an Ingress it does not control looks again. Such an Ingress may
// lack the managed-by label, so the manager's cache does not see it go.
const ConflictRecheckInterval = time.Minute

// conflictRetryDelay is how soon a DynamicIngress is synced again when the
// Ingress changed between the read and the write.
const conflictRetryDelay = 200 * time.Millisecond

// DynamicIngressReconciler makes each target Ingress match the template that
// its state selects.
type DynamicIngressReconciler struct {
	client.Client
	// APIReader reads past the cache, which holds only managed Ingresses,
	// so an unmanaged Ingress at the target name is seen.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// MaxConcurrentReconciles bounds how many DynamicIngresses are synced at
	// once; a state flip fans out to all of them.
	MaxConcurrentReconciles int
	// Clock times switches, for the switch latency metric.
	Clock clock.PassiveClock

	writes *ownWrites
}

// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingresses/finalizers,verbs=update
// +kubebuilder:rbac:groups=ingress.dynamicingress.io,resources=dynamicingressstates,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile reads the DynamicIngress and its state, syncs the target and
// writes the status when it changed.
func (r *DynamicIngressReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	di := &v1beta1.DynamicIngress{}
	if err := r.Get(ctx, req.NamespacedName, di); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(di, req.NamespacedName)
			metrics.ForgetTarget(metrics.KindDynamicIngress, req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.writes.cacheHolds(di) {
		// Deciding from a status this manager already replaced would
		// write it and announce the switch a second time.
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	if !di.DeletionTimestamp.IsZero() {
		// The garbage collector removes the target through its ownerReference.
		metrics.ForgetTarget(metrics.KindDynamicIngress, di.Namespace, di.Name)
		return ctrl.Result{}, nil
	}

	state, err := r.getState(ctx, di)
	if err != nil {
		return ctrl.Result{}, err
	}
	active := activeCondition(di, state)
	isActive := active.Status == metav1.ConditionTrue
	target, syncErr := r.syncTarget(ctx, di, ingress.SelectTemplate(di.Spec, isActive), isActive)
	if errors.Is(syncErr, errCacheLag) {
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	if apierrors.IsConflict(syncErr) {
		// The Ingress changed since the cache showed it (a precondition
		// failed): look again soon rather than report a failure.
		return ctrl.Result{RequeueAfter: conflictRetryDelay}, nil
	}
	ready := readyCondition(di, state != nil, active, target)
	metrics.SetActive(metrics.KindDynamicIngress, di.Namespace, di.Name, di.Spec.State, isActive)

	switched, err := r.writeStatus(ctx, di, active, ready)
	if err != nil {
		return ctrl.Result{}, err
	}
	if switched && syncErr == nil {
		latency, known := switchLatency(state, active, r.Clock.Now())
		metrics.RecordSwitch(metrics.KindDynamicIngress, di.Namespace, di.Name, isActive, latency, known)
	}
	if syncErr != nil {
		return ctrl.Result{}, syncErr
	}
	if target.reason == v1beta1.ReasonTargetConflict {
		return ctrl.Result{RequeueAfter: ConflictRecheckInterval}, nil
	}
	return ctrl.Result{}, nil
}

// getState returns the DynamicIngressState named in spec.state, nil when it
// does not exist.
func (r *DynamicIngressReconciler) getState(ctx context.Context, di *v1beta1.DynamicIngress) (*v1beta1.DynamicIngressState, error) {
	state := &v1beta1.DynamicIngressState{}
	err := r.Get(ctx, types.NamespacedName{Namespace: di.Namespace, Name: di.Spec.State}, state)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return state, nil
}

// syncTarget makes the target Ingress what tpl says (absent when tpl is
// nil), unless an Ingress this DynamicIngress does not control is there.
func (r *DynamicIngressReconciler) syncTarget(ctx context.Context, di *v1beta1.DynamicIngress, tpl *v1beta1.IngressTemplate, active bool) (targetResult, error) {
	log := ctrl.LoggerFrom(ctx)
	key := types.NamespacedName{Namespace: ingress.TargetNamespace(di), Name: di.Spec.Target.Name}
	if key.Namespace != di.Namespace {
		// The webhook refuses this; without it, writing into another
		// namespace would reach past what the user may change, and an
		// ownerReference across namespaces makes the collector delete the
		// Ingress.
		return targetResult{reason: v1beta1.ReasonApplyFailed,
			message: fmt.Sprintf("spec.target.namespace %q is not the DynamicIngress's own namespace %q; nothing was written", key.Namespace, di.Namespace)}, nil
	}
	if other, err := r.olderTargeting(ctx, di); err != nil || other != "" {
		if err != nil {
			return applyFailed(fmt.Errorf("listing the DynamicIngresses of Ingress %s: %w", key, err))
		}
		return targetResult{reason: v1beta1.ReasonTargetConflict,
			message: fmt.Sprintf("DynamicIngress %q already targets Ingress %s; this one leaves it alone", other, key)}, nil
	}
	existing, err := r.getTarget(ctx, key)
	if err != nil {
		if errors.Is(err, errCacheLag) {
			return targetResult{}, err
		}
		return applyFailed(fmt.Errorf("reading Ingress %s: %w", key, err))
	}
	if existing != nil && !metav1.IsControlledBy(existing, di) {
		return targetResult{reason: v1beta1.ReasonTargetConflict,
			message: fmt.Sprintf("Ingress %s exists and is not controlled by this DynamicIngress; it is left untouched", key)}, nil
	}

	mode := modeName(active)
	if tpl == nil {
		if existing == nil || !existing.DeletionTimestamp.IsZero() {
			return synced("No Ingress in %s mode", mode)
		}
		err := r.Delete(ctx, existing, client.Preconditions{UID: &existing.UID, ResourceVersion: &existing.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) {
			return applyFailed(fmt.Errorf("deleting Ingress %s: %w", key, err))
		}
		r.writes.deleted(existing)
		log.Info("Deleted Ingress", "ingress", key, "mode", mode)
		return synced("No Ingress in %s mode", mode)
	}

	desired, err := ingress.Render(di, tpl)
	if err != nil {
		return applyFailed(err)
	}
	if existing == nil {
		return r.createTarget(ctx, key, desired, mode)
	}
	if existing, err = r.ownCreatedFields(ctx, existing); err != nil {
		return applyFailed(fmt.Errorf("taking over the fields of Ingress %s: %w", key, err))
	}
	upToDate, err := ingress.UpToDate(existing, desired, v1beta1.FieldOwner)
	if err != nil {
		return applyFailed(err)
	}
	if upToDate {
		return synced("Ingress %s follows the %s template", key, mode)
	}
	// The UID is a precondition: the apply fails rather than touch an
	// Ingress that replaced ours since it was read.
	if err := r.Apply(ctx, desired.WithUID(existing.UID), client.FieldOwner(v1beta1.FieldOwner), client.ForceOwnership); err != nil {
		return applyFailed(fmt.Errorf("applying Ingress %s: %w", key, err))
	}
	r.writes.wrote(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{
		Namespace: key.Namespace, Name: key.Name, ResourceVersion: ptr.Deref(desired.ResourceVersion, "")}})
	log.Info("Updated Ingress", "ingress", key, "mode", mode)
	return synced("Ingress %s follows the %s template", key, mode)
}

// createTarget creates the target with a plain create, which fails when an
// Ingress of that name appeared since it was read, where an apply would
// take that Ingress over. The created fields then move to the apply field
// owner, so that later applies can remove them.
func (r *DynamicIngressReconciler) createTarget(ctx context.Context, key types.NamespacedName, desired *networkingv1ac.IngressApplyConfiguration, mode string) (targetResult, error) {
	ing, err := ingress.Object(desired)
	if err != nil {
		return applyFailed(err)
	}
	if err := r.Create(ctx, ing, client.FieldOwner(v1beta1.FieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return targetResult{reason: v1beta1.ReasonTargetConflict,
				message: fmt.Sprintf("Ingress %s was created by someone else; it is left untouched", key)}, nil
		}
		return applyFailed(fmt.Errorf("creating Ingress %s: %w", key, err))
	}
	r.writes.wrote(ing)
	ctrl.LoggerFrom(ctx).Info("Created Ingress", "ingress", key, "mode", mode)
	if _, err := r.ownCreatedFields(ctx, ing); err != nil {
		return applyFailed(fmt.Errorf("taking over the fields of Ingress %s: %w", key, err))
	}
	return synced("Ingress %s follows the %s template", key, mode)
}

// ownCreatedFields moves the fields that our create set (an Update entry
// of our field owner) to our apply entry, guarded by resourceVersion. It
// returns the Ingress as it is afterwards.
func (r *DynamicIngressReconciler) ownCreatedFields(ctx context.Context, ing *networkingv1.Ingress) (*networkingv1.Ingress, error) {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(ing, sets.New(v1beta1.FieldOwner), v1beta1.FieldOwner)
	if err != nil || patch == nil {
		return ing, err
	}
	ing = ing.DeepCopy()
	if err := r.Patch(ctx, ing, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return nil, err
	}
	r.writes.wrote(ing)
	return ing, nil
}

func synced(format string, args ...any) (targetResult, error) {
	return targetResult{reason: v1beta1.ReasonSynced, message: fmt.Sprintf(format, args...)}, nil
}

func applyFailed(err error) (targetResult, error) {
	return targetResult{reason: v1beta1.ReasonApplyFailed, message: err.Error()}, err
}

// errCacheLag says the cache does not hold the manager's own last write to
// an object yet: the reconcile is to be retried shortly.
var errCacheLag = errors.New("the cache does not hold the last write yet")

// getTarget reads the target from the cache and, when the cache has no
// such managed Ingress, from the API server. It returns nil when there is
// none, and errCacheLag when the cache shows an Ingress older than this
// manager's last write to it.
func (r *DynamicIngressReconciler) getTarget(ctx context.Context, key types.NamespacedName) (*networkingv1.Ingress, error) {
	ing := &networkingv1.Ingress{}
	err := r.Get(ctx, key, ing)
	if err == nil && !r.writes.cacheHolds(ing) {
		return nil, errCacheLag
	}
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, ing)
	}
	if apierrors.IsNotFound(err) {
		r.writes.forget(ing, key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ing, nil
}

// olderTargeting names another DynamicIngress of the namespace that names
// the same target and was there first (the admission webhook refuses a
// second one; this holds when two were created at the same moment, or
// without the webhook). "" when there is none.
func (r *DynamicIngressReconciler) olderTargeting(ctx context.Context, di *v1beta1.DynamicIngress) (string, error) {
	list := &v1beta1.DynamicIngressList{}
	if err := r.List(ctx, list, client.InNamespace(di.Namespace),
		client.MatchingFields{index.DynamicIngressTarget: di.Spec.Target.Name}); err != nil {
		return "", err
	}
	return firstClaimant(list.Items, di), nil
}

// writeStatus sets both conditions, writes the status only when it changed,
// and records events for the transitions. It reports whether the status
// it wrote is a switch between active and passive.
func (r *DynamicIngressReconciler) writeStatus(ctx context.Context, di *v1beta1.DynamicIngress, active, ready metav1.Condition) (bool, error) {
	before := di.DeepCopy()
	prevActive := meta.FindStatusCondition(before.Status.Conditions, v1beta1.ConditionActive)
	prevReady := meta.FindStatusCondition(before.Status.Conditions, v1beta1.ConditionReady)

	meta.SetStatusCondition(&di.Status.Conditions, active)
	meta.SetStatusCondition(&di.Status.Conditions, ready)
	di.Status.ObservedGeneration = di.Generation
	if equality.Semantic.DeepEqual(before.Status, di.Status) {
		return false, nil
	}
	if err := r.Status().Patch(ctx, di, client.MergeFrom(before)); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	r.writes.wrote(di)

	for _, e := range transitionEvents(prevActive, prevReady, active, ready) {
		r.Recorder.Eventf(di, nil, e.eventType, e.reason, e.action, "%s", e.note)
	}
	return prevActive != nil && prevActive.Status != active.Status, nil
}

// SetupWithManager registers the controller. Call index.Setup first.
func (r *DynamicIngressReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.DynamicIngress{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&networkingv1.Ingress{}).
		Watches(&v1beta1.DynamicIngressState{},
			handler.EnqueueRequestsFromMapFunc(r.stateToDynamicIngresses),
			builder.WithPredicates(responseChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles, RateLimiter: retryRateLimiter()}).
		Named("dynamicingress").
		Complete(r)
}

// stateToDynamicIngresses lists the DynamicIngresses that a state drives.
func (r *DynamicIngressReconciler) stateToDynamicIngresses(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &v1beta1.DynamicIngressList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{index.DynamicIngressState: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list the DynamicIngresses of a state", "state", client.ObjectKeyFromObject(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, di := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&di)})
	}
	return reqs
}

// responseChanged passes state creations and deletions, and updates that
// change the response DynamicIngresses compare with; a state's condition
// changing alone does not concern them.
func responseChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*v1beta1.DynamicIngressState)
			after, ok2 := e.ObjectNew.(*v1beta1.DynamicIngressState)
			if !ok1 || !ok2 {
				return true
			}
			return before.Status.StatusCode != after.Status.StatusCode || before.Status.Body != after.Status.Body
		},
	}
}
