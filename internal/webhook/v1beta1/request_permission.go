package v1beta1

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// RequestAuthorizer answers whether a user may have the manager send
// requests from a namespace: a served check (spec.served) or a
// notification sink (spec.sink) is a request the manager sends with its
// own network position, as a probe is, so it needs the permission a probe
// needs, to create DynamicIngressStates there (docs/security.md, Who may
// make the manager send requests).
type RequestAuthorizer interface {
	MaySendRequests(ctx context.Context, user authenticationv1.UserInfo, namespace string) (bool, error)
}

// AccessReviews is the RequestAuthorizer of the manager: a
// SubjectAccessReview asking whether the user may create
// dynamicingressstates in the namespace.
type AccessReviews struct {
	// Client creates the SubjectAccessReviews (never cached).
	Client client.Client
}

var _ RequestAuthorizer = AccessReviews{}

// MaySendRequests implements RequestAuthorizer.
func (s AccessReviews) MaySendRequests(ctx context.Context, user authenticationv1.UserInfo, namespace string) (bool, error) {
	sar := stateCreateReview(user, namespace)
	if err := s.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("asking the API server whether %q may create dynamicingressstates in namespace %q: %w", user.Username, namespace, err)
	}
	return sar.Status.Allowed, nil
}

// stateCreateReview is the SubjectAccessReview of user creating
// DynamicIngressStates in namespace.
func stateCreateReview(user authenticationv1.UserInfo, namespace string) *authorizationv1.SubjectAccessReview {
	return accessReview(user, &authorizationv1.ResourceAttributes{
		Namespace: namespace,
		Verb:      "create",
		Group:     v1beta1.GroupVersion.Group,
		Version:   v1beta1.GroupVersion.Version,
		Resource:  "dynamicingressstates",
	})
}

// MayApprove implements ApprovalAuthorizer: a SubjectAccessReview asking
// whether the user has the custom verb approve on the switch (resource,
// its plural, in namespace, by name).
func (s AccessReviews) MayApprove(ctx context.Context, user authenticationv1.UserInfo, resource, namespace, name string) (bool, error) {
	sar := approveReview(user, resource, namespace, name)
	if err := s.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("asking the API server whether %q may approve %s %q in namespace %q: %w", user.Username, resource, name, namespace, err)
	}
	return sar.Status.Allowed, nil
}

// approveReview is the SubjectAccessReview of user approving the pin of
// the switch name, of resource, in namespace.
func approveReview(user authenticationv1.UserInfo, resource, namespace, name string) *authorizationv1.SubjectAccessReview {
	return accessReview(user, &authorizationv1.ResourceAttributes{
		Namespace: namespace,
		Verb:      ApproveVerb,
		Group:     v1beta1.GroupVersion.Group,
		Version:   v1beta1.GroupVersion.Version,
		Resource:  resource,
		Name:      name,
	})
}

// accessReview is the SubjectAccessReview of user doing what attributes
// say, with every attribute of the user the admission request carries
// (groups and extra decide as much as the name).
func accessReview(user authenticationv1.UserInfo, attributes *authorizationv1.ResourceAttributes) *authorizationv1.SubjectAccessReview {
	var extra map[string]authorizationv1.ExtraValue
	if len(user.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user.Username,
		UID:                user.UID,
		Groups:             user.Groups,
		Extra:              extra,
		ResourceAttributes: attributes,
	}}
}

// servedSetOrChanged reports whether an admission of a switch sets or
// changes spec.served (old nil on create). Removing it sends nothing and
// needs nothing.
func servedSetOrChanged(old, sw *v1beta1.ServedCheck) bool {
	return sw != nil && (old == nil || !equality.Semantic.DeepEqual(*old, *sw))
}

// sinkSetOrChanged reports whether an admission of a notifier sets or
// changes spec.sink (old nil on create).
func sinkSetOrChanged(old, n *v1beta1.DynamicIngressNotifier) bool {
	return old == nil || !equality.Semantic.DeepEqual(old.Spec.Sink, n.Spec.Sink)
}

// Request sources, as the refusal names them.
const (
	servedRequests = "a served check"
	sinkRequests   = "a notification sink"
)

// requestsForbidden is the refusal of a change at path that makes the
// manager send requests, by a user who may not create states in namespace.
func requestsForbidden(path *field.Path, source, namespace string) *field.Error {
	return field.Forbidden(path, fmt.Sprintf("%s makes the manager send requests; it needs permission to create dynamicingressstates in namespace %q", source, namespace))
}

// checkRequestPermission refuses, at path, a change that makes the manager
// send requests from namespace when the admission request's user may not
// create states there. A webhook built without an authorizer refuses
// every such change: it cannot tell who may.
func checkRequestPermission(ctx context.Context, authz RequestAuthorizer, path *field.Path, source, namespace string) field.ErrorList {
	if authz == nil {
		return field.ErrorList{requestsForbidden(path, source, namespace)}
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	allowed, err := authz.MaySendRequests(ctx, req.UserInfo, namespace)
	switch {
	case err != nil:
		return field.ErrorList{field.InternalError(path, err)}
	case !allowed:
		return field.ErrorList{requestsForbidden(path, source, namespace)}
	}
	return nil
}
