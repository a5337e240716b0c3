package plugin

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// PermissionError is a request the API server refused for want of a
// permission: the one line a command prints names the verb, the resource
// and where it was asked, then the API server's own message (which names
// the user).
type PermissionError struct {
	// Command is the plugin command that needs the permission ("wait").
	Command string
	Verb    string
	// Resource is plural.group, as kubectl auth can-i takes it:
	// dynamicingresses.ingress.dynamicingress.io.
	Resource string
	// Namespace is where it was asked: "" for every namespace (-A), or
	// for a cluster-scoped resource (ClusterScoped).
	Namespace     string
	ClusterScoped bool
	Err           error
}

func (e *PermissionError) Error() string {
	where := fmt.Sprintf("in namespace %q", e.Namespace)
	switch {
	case e.ClusterScoped:
		where = "(cluster-scoped)"
	case e.Namespace == "":
		where = "in every namespace (-A; -n NAMESPACE asks in one)"
	}
	return fmt.Sprintf("%s needs %s on %s %s: %v", e.Command, e.Verb, e.Resource, where, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// resourceName is a kind's resource as RBAC names it, plural.group:
// ingresses.networking.k8s.io, httproutes.gateway.networking.k8s.io.
func resourceName(gvk schema.GroupVersionKind) string {
	plural := strings.ToLower(kindPlural(gvk.Kind))
	if gvk.Group == "" {
		return plural
	}
	return plural + "." + gvk.Group
}

// endsWait says whether an error of a list or watch ends `wait`: a
// refusal that waiting does not change (Forbidden, Unauthorized). Any
// other error is retried, as the informer retries it.
func endsWait(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// transient says whether a failed request is worth sending again: the API
// server was busy (429) or failed (5xx, a timeout), or the connection
// dropped. A refusal (4xx) is not: the same request gets the same answer.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || code >= 500
	}
	var netErr net.Error
	return utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) && netErr.Timeout()
}
