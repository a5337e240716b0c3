package v1beta1

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// SetupWebhooksWithManager registers the defaulting and validating webhooks
// of every kind with the manager's webhook server. It uses the field indexes
// of package index (controller.SetupWithManager registers them).
func SetupWebhooksWithManager(mgr ctrl.Manager, guard probe.Guard) error {
	// Who may make the manager send requests, asked of the API server
	// (SubjectAccessReviews are never cached).
	requests := AccessReviews{Client: mgr.GetClient()}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1beta1.DynamicIngress{}).
		WithDefaulter(SwitchDefaulter[*v1beta1.DynamicIngress]{}).
		WithValidator(SwitchValidator[*v1beta1.DynamicIngress]{Kind: target.Ingress{}, Guard: guard,
			Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Cache: mgr.GetClient(), Validate: ValidateDynamicIngress, Requests: requests, Approvals: requests}).
		Complete(); err != nil {
		return err
	}
	// The HTTPRoute adapter's defaults matter only to the controller; the
	// webhook renders and dry-runs templates as they are.
	if err := ctrl.NewWebhookManagedBy(mgr, &v1beta1.DynamicHTTPRoute{}).
		WithDefaulter(SwitchDefaulter[*v1beta1.DynamicHTTPRoute]{}).
		WithValidator(SwitchValidator[*v1beta1.DynamicHTTPRoute]{Kind: target.HTTPRoute{}, Guard: guard,
			Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Cache: mgr.GetClient(), Validate: ValidateDynamicHTTPRoute, Requests: requests, Approvals: requests}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1beta1.DynamicIngressState{}).
		WithDefaulter(DynamicIngressStateDefaulter{}).
		WithValidator(DynamicIngressStateValidator{Guard: guard}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1beta1.ClusterDynamicIngressState{}).
		WithDefaulter(ClusterDynamicIngressStateDefaulter{}).
		WithValidator(ClusterDynamicIngressStateValidator{Guard: guard}).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &v1beta1.DynamicIngressNotifier{}).
		WithDefaulter(DynamicIngressNotifierDefaulter{}).
		WithValidator(DynamicIngressNotifierValidator{Guard: guard, Requests: requests}).
		Complete()
}

// invalid is the Invalid status kubectl prints as
// `The <Kind> "<name>" is invalid: <field>: <reason>`, or nil.
func invalid(name, kind string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: kind}, name, errs)
}
