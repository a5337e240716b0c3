package v1beta1

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/follow"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// ApproveVerb is the custom verb a user needs on a switch's resource to
// approve its pin (docs/security.md, "Who may approve a pin"). No built-in
// role has it by name; a role with the verb "*" has it.
const ApproveVerb = "approve"

// The override approval annotations of a switch.
const (
	OverrideApprovedByAnnotation = v1beta1.OverrideApprovedByAnnotation
	OverrideApprovedAtAnnotation = v1beta1.OverrideApprovedAtAnnotation
)

// ApprovalAuthorizer answers whether a user may approve the pins of a
// switch: the verb approve on its resource (dynamicingresses or
// dynamichttproutes), in its namespace, by name.
type ApprovalAuthorizer interface {
	MayApprove(ctx context.Context, user authenticationv1.UserInfo, resource, namespace, name string) (bool, error)
}

var _ ApprovalAuthorizer = AccessReviews{}

// approvalForbidden is why an edit of an approval annotation that is not
// an approval is refused.
const approvalForbidden = "set by the admission webhook when a second person approves the pin (kubectl dynamic approve); it cannot be edited or removed otherwise: a change of the pin removes it"

// approvalRequested says whether an update asks to approve the pin: it
// sets override-approved-by, or gives it another value, and leaves the pin
// alone (a change of the pin removes the approval instead). A switch is
// never created approved.
func approvalRequested(old, sw target.Switch) bool {
	if old == nil {
		return false
	}
	oldSpec := old.SwitchSpec()
	if pinRemade(&oldSpec, sw.SwitchSpec()) {
		return false
	}
	is, has := sw.GetAnnotations()[OverrideApprovedByAnnotation]
	was, had := old.GetAnnotations()[OverrideApprovedByAnnotation]
	return has && (!had || was != is)
}

// switchResource is the resource of a switch kind, as RBAC names it.
func switchResource(kind target.Kind) string {
	plural := strings.ToLower(kind.SwitchKind())
	if strings.HasSuffix(plural, "s") {
		return plural + "es"
	}
	return plural + "s"
}

// validateApproval checks an approval of sw's pin (approvalRequested): the
// defaulting webhook wrote the admission request's user into
// override-approved-by; the pin must wait for approval (set, not expired,
// to a mode a followed state's overridePolicy.approval names, not
// approved yet), the user must not be the one who set it, and must have
// the verb approve on the switch (docs/behaviour.md, "Approval").
func (v SwitchValidator[T]) validateApproval(ctx context.Context, old, sw T, now time.Time) field.ErrorList {
	path := field.NewPath("metadata", "annotations").Key(OverrideApprovedByAnnotation)
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	user := req.UserInfo.Username
	if by := decision.ApprovedBy(old.GetAnnotations()); by != "" {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("the pin is approved already, by %q", by))}
	}
	annotations := sw.GetAnnotations()
	if annotations[OverrideApprovedByAnnotation] != user || decision.ApprovedBy(annotations) == "" {
		// The defaulting webhook did not see this request.
		return field.ErrorList{field.Forbidden(path, approvalForbidden)}
	}
	spec := sw.SwitchSpec()
	policies, err := follow.Policies(ctx, v.Reader, sw.GetNamespace(), spec)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	if why := decision.ApprovalRefusal(spec, decision.MergePolicies(policies), old.GetAnnotations()[OverrideByAnnotation], user, now); why != "" {
		return field.ErrorList{field.Forbidden(path, why)}
	}
	resource := switchResource(v.Kind)
	if v.Approvals == nil {
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("%q may not approve pins: no one may, the webhook cannot ask the API server", user))}
	}
	allowed, err := v.Approvals.MayApprove(ctx, req.UserInfo, resource, sw.GetNamespace(), sw.GetName())
	switch {
	case err != nil:
		return field.ErrorList{field.InternalError(path, err)}
	case !allowed:
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("%q may not approve the pin: it needs the verb %s on %s in namespace %q (docs/security.md, \"Who may approve a pin\")",
			user, ApproveVerb, resource, sw.GetNamespace()))}
	}
	return nil
}
