package v1beta1

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// templateErrors turns the API server's answer to a dry run of a rendered
// template into errors under the template's field path, keeping the API
// server's own messages. Any other rejection (another webhook's, a
// terminating namespace) is reported on the template as a whole.
func templateErrors(kind target.Kind, tplPath, targetName *field.Path, err error) field.ErrorList {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != metav1.StatusReasonInvalid ||
		status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return field.ErrorList{field.Invalid(tplPath, field.OmitValueType{}, fmt.Sprintf("the API server rejects this template as an %s: %s", kind.TargetGVK().Kind, err))}
	}
	var errs field.ErrorList
	for _, cause := range status.Status().Details.Causes {
		errs = append(errs, causeError(tplPath, targetName, cause))
	}
	return errs
}

// causeError maps one cause of a rejected target to our field path: the
// target's spec and metadata live in the template; its name is the target's.
func causeError(tplPath, targetName *field.Path, cause metav1.StatusCause) *field.Error {
	var path *field.Path
	switch cause.Field {
	case "metadata.name":
		path = targetName
	case "":
		path = tplPath
	default:
		path = tplPath.Child(cause.Field)
	}
	errType := field.ErrorType(cause.Type)
	// The message already reads "<type>: <value>: <detail>"; keep it whole.
	detail := strings.TrimPrefix(cause.Message, errType.String()+": ")
	return &field.Error{Type: errType, Field: path.String(), BadValue: field.OmitValueType{}, Detail: detail}
}

// dryRunRequest is the object to send as a dry run for a rendered template,
// and whether to send it as an update. An existing target of this switch
// is updated in place, so that admission webhooks that reject host and
// path clashes (ingress-nginx's, for one) compare it with itself; a missing
// target is created under its own name; an object of someone else holding
// the name is left aside and the shape is checked under a generated name.
func dryRunRequest(sw target.Switch, rendered *unstructured.Unstructured, existing client.Object) (*unstructured.Unstructured, bool, error) {
	obj := rendered.DeepCopy()
	// A new switch has no UID yet to refer to.
	obj.SetOwnerReferences(nil)
	switch {
	case existing == nil:
		return obj, false, nil
	case metav1.IsControlledBy(existing, sw):
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
		if err != nil {
			return nil, false, err
		}
		updated := &unstructured.Unstructured{Object: content}
		updated.SetGroupVersionKind(rendered.GroupVersionKind())
		updated.SetLabels(obj.GetLabels())
		updated.SetAnnotations(obj.GetAnnotations())
		if spec, ok := obj.Object["spec"]; ok {
			updated.Object["spec"] = spec
		} else {
			delete(updated.Object, "spec")
		}
		return updated, true, nil
	default:
		obj.SetName("")
		obj.SetGenerateName("dynamic-validation-")
		return obj, false, nil
	}
}
