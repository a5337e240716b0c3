package v1beta1

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/index"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/ingress"
)

// +kubebuilder:webhook:path=/mutate-ingress-dynamicingress-io-v1beta1-dynamicingress,mutating=true,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingresses,verbs=create;update,versions=v1beta1,name=mdynamicingress.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-ingress-dynamicingress-io-v1beta1-dynamicingress,mutating=false,failurePolicy=fail,sideEffects=None,groups=ingress.dynamicingress.io,resources=dynamicingresses,verbs=create;update,versions=v1beta1,name=vdynamicingress.ingress.dynamicingress.io,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"matchConditions":[{"name":"not-being-deleted","expression":"!has(object.metadata.deletionTimestamp)"},{"name":"spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

// DynamicIngressDefaulter defaults DynamicIngresses.
type DynamicIngressDefaulter struct{}

var _ admission.Defaulter[*v1beta1.DynamicIngress] = DynamicIngressDefaulter{}

// Default implements admission.Defaulter.
func (DynamicIngressDefaulter) Default(_ context.Context, di *v1beta1.DynamicIngress) error {
	DefaultDynamicIngress(di)
	return nil
}

// DynamicIngressValidator validates DynamicIngresses: the static rules, the
// target not existing yet (on create), and each template being an Ingress
// the API server accepts.
type DynamicIngressValidator struct {
	// Reader reads Ingresses live, past any cache, so that an Ingress
	// created a moment ago is seen.
	Reader client.Reader
	// Writer sends the dry-run writes that check the templates.
	Writer client.Writer
	// Cache lists DynamicIngresses by the index.DynamicIngressTarget field
	// index, to find another DynamicIngress naming the same target.
	Cache client.Reader
}

var _ admission.Validator[*v1beta1.DynamicIngress] = DynamicIngressValidator{}

// ValidateCreate implements admission.Validator.
func (v DynamicIngressValidator) ValidateCreate(ctx context.Context, di *v1beta1.DynamicIngress) (admission.Warnings, error) {
	errs := ValidateDynamicIngress(nil, di)
	if len(errs) == 0 {
		existing, err := v.target(ctx, di)
		other, listErr := v.otherTargeting(ctx, di)
		switch {
		case err != nil:
			errs = append(errs, field.InternalError(field.NewPath("spec", "target"), err))
		case listErr != nil:
			errs = append(errs, field.InternalError(field.NewPath("spec", "target"), listErr))
		case other != "":
			errs = append(errs, targetTaken(di.Namespace, di.Spec.Target.Name, other))
		case existing != nil:
			errs = append(errs, targetExists(existing.Namespace, existing.Name))
		default:
			errs = append(errs, v.validateTemplates(ctx, di, nil)...)
		}
	}
	return nil, invalid(di.Name, "DynamicIngress", errs)
}

// ValidateUpdate implements admission.Validator. An update that leaves the
// spec alone (labels, finalizers, the garbage collector at work) or comes
// while the object is being deleted is let through: checking templates then
// could only block a deletion or a relabelling, for instance when the
// namespace is terminating and refuses even a dry-run Ingress.
func (v DynamicIngressValidator) ValidateUpdate(ctx context.Context, old, di *v1beta1.DynamicIngress) (admission.Warnings, error) {
	if !di.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(old.Spec, di.Spec) {
		return nil, nil
	}
	errs := ValidateDynamicIngress(old, di)
	if len(errs) == 0 {
		existing, err := v.target(ctx, di)
		if err != nil {
			errs = append(errs, field.InternalError(field.NewPath("spec", "target"), err))
		} else {
			errs = append(errs, v.validateTemplates(ctx, di, existing)...)
		}
	}
	return nil, invalid(di.Name, "DynamicIngress", errs)
}

// ValidateDelete implements admission.Validator.
func (DynamicIngressValidator) ValidateDelete(context.Context, *v1beta1.DynamicIngress) (admission.Warnings, error) {
	return nil, nil
}

// otherTargeting names another DynamicIngress of the namespace with the
// same target, "" when there is none.
func (v DynamicIngressValidator) otherTargeting(ctx context.Context, di *v1beta1.DynamicIngress) (string, error) {
	list := &v1beta1.DynamicIngressList{}
	if err := v.Cache.List(ctx, list, client.InNamespace(di.Namespace),
		client.MatchingFields{index.DynamicIngressTarget: di.Spec.Target.Name}); err != nil {
		return "", fmt.Errorf("listing DynamicIngresses: %w", err)
	}
	return otherTargeting(list.Items, di), nil
}

func (v DynamicIngressValidator) target(ctx context.Context, di *v1beta1.DynamicIngress) (*networkingv1.Ingress, error) {
	ing := &networkingv1.Ingress{}
	err := v.Reader.Get(ctx, types.NamespacedName{Namespace: ingress.TargetNamespace(di), Name: di.Spec.Target.Name}, ing)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the target Ingress: %w", err)
	}
	return ing, nil
}

// validateTemplates sends each template to the API server as a dry run of
// the Ingress the operator would write (see dryRunRequest).
func (v DynamicIngressValidator) validateTemplates(ctx context.Context, di *v1beta1.DynamicIngress, existing *networkingv1.Ingress) field.ErrorList {
	var errs field.ErrorList
	variants := []struct {
		name    string
		variant *v1beta1.IngressVariant
	}{{"passiveIngress", di.Spec.PassiveIngress}, {"activeIngress", di.Spec.ActiveIngress}}
	for _, tv := range variants {
		if tv.variant == nil {
			continue
		}
		path := field.NewPath("spec", tv.name, "template")
		errs = append(errs, templateErrors(path, field.NewPath("spec", "target", "name"), v.dryRun(ctx, di, &tv.variant.Template, existing))...)
	}
	return errs
}

func (v DynamicIngressValidator) dryRun(ctx context.Context, di *v1beta1.DynamicIngress, tpl *v1beta1.IngressTemplate, existing *networkingv1.Ingress) error {
	desired, err := ingress.Render(di, tpl)
	if err != nil {
		return err
	}
	rendered, err := ingress.Object(desired)
	if err != nil {
		return err
	}
	ing, update := dryRunRequest(di, rendered, existing)
	if update {
		return v.Writer.Update(ctx, ing, client.DryRunAll)
	}
	return v.Writer.Create(ctx, ing, client.DryRunAll)
}
