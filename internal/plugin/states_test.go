package plugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestParseState(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"DynamicIngressState", "DynamicIngress"} {
		mapper.Add(v1beta1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	mapper.Add(v1beta1.GroupVersion.WithKind("ClusterDynamicIngressState"), meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, meta.RESTScopeNamespace)
	namespaced := func(name string) v1beta1.StateReference {
		return v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: name}
	}
	tests := []struct {
		arg     string
		want    v1beta1.StateReference
		wantErr string
	}{
		{arg: "killswitch", want: namespaced("killswitch")},
		{arg: "dynamicingressstate/killswitch", want: namespaced("killswitch")},
		{arg: "dynamicingressstates/killswitch", want: namespaced("killswitch")},
		{arg: "clusterdynamicingressstate/global", want: v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "global"}},
		{arg: "dynamicingress/storefront", wantErr: `"dynamicingress/storefront": name a state as NAME, dis/NAME or cdis/NAME`},
		{arg: "ingresses/storefront", wantErr: `"ingresses/storefront": name a state as NAME, dis/NAME or cdis/NAME`},
		{arg: "nothing/storefront", wantErr: `"nothing/storefront": name a state as NAME, dis/NAME or cdis/NAME`},
		{arg: "dis/", wantErr: `"dis/": name a state as NAME, dis/NAME or cdis/NAME`},
		{arg: "dis/a/b", wantErr: `"dis/a/b": name a state as NAME, dis/NAME or cdis/NAME`},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			got, err := ParseState(tt.arg, mapper)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				if _, usage := err.(*UsageError); !usage {
					t.Errorf("error %T, want a usage error", err)
				}
			}
			if diff := cmp.Diff([]any{tt.want, tt.wantErr}, []any{got, gotErr}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
