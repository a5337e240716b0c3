package decision

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// Admits reports whether a cluster state's grant (spec.followers.namespaces)
// admits a namespace with these labels (docs/security.md, "Who may follow
// a cluster state"): All admits every namespace, Selector those whose
// labels its selector matches. A grant that cannot be read (no from, a
// Selector without a selector, a malformed selector: the API server and
// the webhook refuse them) admits no namespace, and the error says why.
func Admits(grant v1beta1.FollowerNamespaces, namespaceLabels map[string]string) (bool, error) {
	switch grant.From {
	case v1beta1.NamespacesFromAll:
		return true, nil
	case v1beta1.NamespacesFromSelector:
		if grant.Selector == nil {
			return false, fmt.Errorf("spec.followers.namespaces.selector is not set")
		}
		selector, err := metav1.LabelSelectorAsSelector(grant.Selector)
		if err != nil {
			return false, fmt.Errorf("spec.followers.namespaces.selector: %w", err)
		}
		return selector.Matches(labels.Set(namespaceLabels)), nil
	default:
		return false, fmt.Errorf("spec.followers.namespaces.from is %q, not All or Selector", grant.From)
	}
}

// GrantPhrase says which namespaces a grant admits, for messages.
func GrantPhrase(grant v1beta1.FollowerNamespaces) string {
	switch grant.From {
	case v1beta1.NamespacesFromAll:
		return "every namespace"
	case v1beta1.NamespacesFromSelector:
		if grant.Selector == nil {
			return "no namespace"
		}
		return fmt.Sprintf("the namespaces whose labels match %q", metav1.FormatLabelSelector(grant.Selector))
	default:
		return "no namespace"
	}
}

// NotAdmitted is why a namespace may not follow a cluster state, naming
// the state and its grant; "" when the grant admits the namespace.
func NotAdmitted(stateName string, grant v1beta1.FollowerNamespaces, namespace string, namespaceLabels map[string]string) string {
	ok, err := Admits(grant, namespaceLabels)
	switch {
	case err != nil:
		return fmt.Sprintf("ClusterDynamicIngressState %q admits no namespace: %v", stateName, err)
	case !ok:
		return fmt.Sprintf("ClusterDynamicIngressState %q does not admit namespace %q: its spec.followers.namespaces admits %s",
			stateName, namespace, GrantPhrase(grant))
	}
	return ""
}

// Unfollowed is why a switch has no state to follow: a reason of its
// Active and Ready conditions (StateNotFound, StateNotAdmitted,
// ClusterStatesNotWatched) and a message naming the state.
type Unfollowed struct {
	Reason  string
	Message string
}
