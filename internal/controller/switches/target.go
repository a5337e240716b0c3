package switches

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/writes"
)

// targetResult is what syncing the target came to.
type targetResult struct {
	reason  string // Synced, TargetConflict or ApplyFailed
	message string
	// from is the mode the target was in before a write, nil when its
	// shape did not tell or nothing was written.
	from *bool
}

// syncTarget makes the target what the template of the mode says (absent
// when that mode has none), unless an object the switch does not control
// is there. It reports whether it wrote the target.
func (r *Reconciler) syncTarget(ctx context.Context, sw target.Switch, active bool) (targetResult, bool, error) {
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
	rendered := writes.RenderedFromSwitch(sw, active)
	if existing != nil && r.applied.Holds(swKey, existing.GetResourceVersion(), rendered) {
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
		if from := r.applied.ModeAt(swKey, existing.GetResourceVersion(), rendered); from != nil {
			if body := r.applied.Body(swKey, rendered, existing.GetUID()); body != nil {
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
		r.writes.Deleted(existing)
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
	from := r.applied.ModeAt(swKey, existing.GetResourceVersion(), rendered)
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
func (r *Reconciler) getTarget(ctx context.Context, key types.NamespacedName) (client.Object, error) {
	obj := r.Kind.NewTarget()
	err := r.Get(ctx, key, obj, client.UnsafeDisableDeepCopy)
	if err == nil && !r.writes.CacheHolds(obj) {
		return nil, &cacheLagError{retryAfter: r.writes.RetryAfter(obj)}
	}
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		r.writes.Forget(obj, key)
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
func (r *Reconciler) firstClaimant(ctx context.Context, sw target.Switch) (string, error) {
	list := r.Kind.NewSwitchList()
	if err := r.List(ctx, list, client.InNamespace(sw.GetNamespace()),
		client.MatchingFields{index.Target: sw.SwitchSpec().Target.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return "", err
	}
	return firstClaimant(r.Kind.SwitchItems(list), sw), nil
}

// firstClaimant names the switch of list, other than sw, that names the
// same target and came first (created earlier; by name on a tie), so that
// of two switches with one target exactly one acts on it. "" when sw is the
// first.
func firstClaimant(list []target.Switch, sw target.Switch) string {
	var first target.Switch
	for _, o := range list {
		if o.GetUID() == sw.GetUID() || target.Key(o) != target.Key(sw) {
			continue
		}
		if claimsBefore(o, sw) && (first == nil || claimsBefore(o, first)) {
			first = o
		}
	}
	if first == nil {
		return ""
	}
	return first.GetName()
}

// claimsBefore says whether a was created before b (by name on a tie).
func claimsBefore(a, b target.Switch) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}
