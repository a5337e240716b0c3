package decision

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestAdmits(t *testing.T) {
	selector := func(s *metav1.LabelSelector) v1beta1.FollowerNamespaces {
		return v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromSelector, Selector: s}
	}
	public := map[string]string{"tier": "public", "kubernetes.io/metadata.name": "shop"}
	tests := []struct {
		name    string
		grant   v1beta1.FollowerNamespaces
		labels  map[string]string
		want    bool
		wantErr string
	}{
		{"All admits a namespace without labels", v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromAll}, nil, true, ""},
		{"All ignores a selector", v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromAll,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "none"}}}, public, true, ""},
		{"matchLabels that match", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "public"}}), public, true, ""},
		{"matchLabels that do not match", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "internal"}}), public, false, ""},
		{"a label the namespace lacks", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}), public, false, ""},
		{"a namespace without labels", selector(&metav1.LabelSelector{MatchLabels: map[string]string{"tier": "public"}}), nil, false, ""},
		{"matchExpressions In", selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"public", "partner"}}}}), public, true, ""},
		{"matchExpressions DoesNotExist", selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}}}), public, false, ""},
		{"an empty selector admits every namespace", selector(&metav1.LabelSelector{}), nil, true, ""},
		{"Selector without a selector admits none", selector(nil), public, false, "spec.followers.namespaces.selector is not set"},
		{"a malformed selector admits none", selector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: "Near"}}}), public, false, `spec.followers.namespaces.selector: "Near" is not a valid label selector operator`},
		{"no from admits none", v1beta1.FollowerNamespaces{}, public, false, `spec.followers.namespaces.from is "", not All or Selector`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Admits(tt.grant, tt.labels)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff([]any{tt.want, tt.wantErr}, []any{got, gotErr}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotAdmitted(t *testing.T) {
	tests := []struct {
		name   string
		grant  v1beta1.FollowerNamespaces
		labels map[string]string
		want   string
	}{
		{"admitted", v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromAll}, nil, ""},
		{"not admitted names the state, the namespace and the grant",
			v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "public"}}},
			map[string]string{"tier": "internal"},
			`ClusterDynamicIngressState "global" does not admit namespace "shop": its spec.followers.namespaces admits the namespaces whose labels match "tier=public"`},
		{"an unreadable grant says why", v1beta1.FollowerNamespaces{From: v1beta1.NamespacesFromSelector}, nil,
			`ClusterDynamicIngressState "global" admits no namespace: spec.followers.namespaces.selector is not set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NotAdmitted("global", tt.grant, "shop", tt.labels)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
