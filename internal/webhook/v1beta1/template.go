package v1beta1

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
