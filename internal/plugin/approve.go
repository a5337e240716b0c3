package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// ApproveResult is what `kubectl dynamic approve` did (its -o json shape:
// fields may be added, never renamed).
type ApproveResult struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Pin is the switch's pin once approved.
	Pin *PinReport `json:"pin"`
}

// String is the line approve prints:
// `DynamicIngress "storefront": passive pinned by alice until
// 2026-12-02T03:00:00Z (in 1h59m), approved by bob: INC-1234`.
func (r ApproveResult) String() string {
	return fmt.Sprintf("%s %q: %s", r.Kind, r.Name, r.Pin.Line())
}

// approveRequest is the value approve writes into override-approved-by:
// the admission webhook replaces it with the approving user's name.
const approveRequest = "kubectl-dynamic"

// Approve approves the pending pin of the switch: it reads the switch,
// and sets the override-approved-by annotation with a merge patch that
// carries the resourceVersion it read, so that a pin changed in between is
// not approved unseen (the patch then conflicts). The admission webhook
// writes the approving user's name and refuses an approval by the pin's
// author, by a user without the verb approve, or of a switch with no pin
// waiting (docs/behaviour.md, "Approval"); its refusal is the error.
func Approve(ctx context.Context, c client.Client, kind target.Kind, ns, name string, now time.Time) (ApproveResult, error) {
	sw := kind.NewSwitch()
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, sw); err != nil {
		if apierrors.IsNotFound(err) {
			return ApproveResult{}, &NotFoundError{Kind: kind.SwitchKind(), Name: name, Namespace: ns}
		}
		return ApproveResult{}, fmt.Errorf("reading %s %q in namespace %q: %w", kind.SwitchKind(), name, ns, err)
	}
	if sw.SwitchSpec().Override == "" {
		return ApproveResult{}, fmt.Errorf("%s %q in namespace %q has no pin to approve: spec.override is not set", kind.SwitchKind(), name, ns)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": sw.GetResourceVersion(),
		"annotations":     map[string]string{v1beta1.OverrideApprovedByAnnotation: approveRequest},
	}})
	if err != nil {
		return ApproveResult{}, err
	}
	if err := c.Patch(ctx, sw, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("kubectl-dynamic")); err != nil {
		if apierrors.IsConflict(err) {
			return ApproveResult{}, fmt.Errorf("%s %q in namespace %q changed since it was read (its pin may have changed): look at it again and approve again", kind.SwitchKind(), name, ns)
		}
		return ApproveResult{}, fmt.Errorf("approving the pin of %s %q in namespace %q: %w", kind.SwitchKind(), name, ns, err)
	}
	pin := pinAt(sw, followedPolicy(ctx, c, sw), now)
	return ApproveResult{Kind: kind.SwitchKind(), Name: name, Pin: pinReport(pin, now)}, nil
}
