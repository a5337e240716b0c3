package switches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/trace"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/regions"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/writes"
)

// applyTarget applies body, rendered from rendered for the switch at
// swKey, to existing, its target at key, found in the mode from; it keeps
// the body for the next flip back to this mode.
func (r *Reconciler) applyTarget(ctx context.Context, swKey, key types.NamespacedName, existing client.Object, body []byte, rendered writes.RenderedFrom, from *bool) (targetResult, bool, error) {
	targetKind := r.Kind.TargetGVK().Kind
	mode := decision.ModeName(rendered.Active())
	var rv string
	var err error
	trace.WithRegion(ctx, regions.TargetWrite, func() {
		rv, err = r.metadata.Apply(ctx, r.Kind.TargetGVK(), key, body, v1beta1.FieldOwner)
	})
	if err != nil {
		return unwritten(applyFailed(fmt.Errorf("applying %s %s: %w", targetKind, key, err)))
	}
	r.applied.Record(swKey, rendered, rv)
	r.applied.Keep(swKey, rendered, existing.GetUID(), body)
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
func (r *Reconciler) createTarget(ctx context.Context, key types.NamespacedName, desired *unstructured.Unstructured, mode string) (targetResult, error) {
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
func (r *Reconciler) ownCreatedFields(ctx context.Context, obj client.Object) (client.Object, error) {
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
func (r *Reconciler) wroteTarget(key types.NamespacedName, resourceVersion string) {
	r.writes.WroteVersion(r.Kind.NewTarget(), key, resourceVersion)
}
