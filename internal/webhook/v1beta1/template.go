package v1beta1

import (
	"errors"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// templateErrors turns the API server's answer to a dry run of a rendered
// template into errors under the template's field path, keeping the API
// server's own messages. Any other rejection (another webhook's, a
// terminating namespace) is reported on the template as a whole.
func templateErrors(tplPath, targetName *field.Path, err error) field.ErrorList {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != metav1.StatusReasonInvalid ||
		status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return field.ErrorList{field.Invalid(tplPath, field.OmitValueType{}, "the API server rejects this template as an Ingress: "+err.Error())}
	}
	var errs field.ErrorList
	for _, cause := range status.Status().Details.Causes {
		errs = append(errs, causeError(tplPath, targetName, cause))
	}
	return errs
}

// causeError maps one cause of a rejected Ingress to our field path: the
// Ingress's spec and metadata live in the template; its name is the target's.
func causeError(tplPath, targetName *field.Path, cause metav1.StatusCause) *field.Error {
	var path *field.Path
	switch {
	case cause.Field == "metadata.name":
		path = targetName
	case cause.Field == "":
		path = tplPath
	default:
		path = tplPath.Child(cause.Field)
	}
	errType := field.ErrorType(cause.Type)
	// The message already reads "<type>: <value>: <detail>"; keep it whole.
	detail := strings.TrimPrefix(cause.Message, errType.String()+": ")
	return &field.Error{Type: errType, Field: path.String(), BadValue: field.OmitValueType{}, Detail: detail}
}

// dryRunRequest is the Ingress to send as a dry run for a rendered template,
// and whether to send it as an update. An existing target of this
// DynamicIngress is updated in place, so that Ingress admission webhooks
// that reject host and path clashes compare it with itself; a missing
// target is created under its own name; an Ingress of someone else holding
// the name is left aside and the shape is checked under a generated name.
func dryRunRequest(di *v1beta1.DynamicIngress, rendered, existing *networkingv1.Ingress) (*networkingv1.Ingress, bool) {
	ing := rendered.DeepCopy()
	// A new DynamicIngress has no UID yet to refer to.
	ing.OwnerReferences = nil
	switch {
	case existing == nil:
		return ing, false
	case metav1.IsControlledBy(existing, di):
		updated := existing.DeepCopy()
		updated.Labels, updated.Annotations, updated.Spec = ing.Labels, ing.Annotations, ing.Spec
		return updated, true
	default:
		ing.Name, ing.GenerateName = "", "dynamicingress-validation-"
		return ing, false
	}
}
