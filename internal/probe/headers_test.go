package probe

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

func TestHeadersOf(t *testing.T) {
	fromSecret := func(name, key string) *v1beta1.HeaderValueSource {
		return &v1beta1.HeaderValueSource{SecretKeyRef: v1beta1.SecretKeySelector{Name: name, Key: key}}
	}
	for _, tt := range []struct {
		name      string
		namespace string
		headers   []v1beta1.HTTPHeader
		want      []Header
	}{
		{
			name:      "no headers send none",
			namespace: "shop",
			headers:   nil,
			want:      []Header{},
		},
		{
			name:      "a literal value is sent as written",
			namespace: "shop",
			headers:   []v1beta1.HTTPHeader{{Name: "X-Env", Value: "prod"}},
			want:      []Header{{Name: "X-Env", Value: "prod"}},
		},
		{
			name:      "a value from a Secret names the key in the secret namespace",
			namespace: "shop",
			headers:   []v1beta1.HTTPHeader{{Name: "Authorization", ValueFrom: fromSecret("flags-token", "authorization")}},
			want: []Header{{Name: "Authorization",
				FromSecret: &SecretKey{Namespace: "shop", Name: "flags-token", Key: "authorization"}}},
		},
		{
			name:      "the secret namespace is the one given, whatever the caller",
			namespace: "dynamic-ingress-system",
			headers:   []v1beta1.HTTPHeader{{Name: "Authorization", ValueFrom: fromSecret("platform-token", "t")}},
			want: []Header{{Name: "Authorization",
				FromSecret: &SecretKey{Namespace: "dynamic-ingress-system", Name: "platform-token", Key: "t"}}},
		},
		{
			// The API refuses both set; the Secret wins, so a literal value
			// left beside valueFrom is never sent.
			name:      "a value from a Secret drops a literal value beside it",
			namespace: "shop",
			headers:   []v1beta1.HTTPHeader{{Name: "Authorization", Value: "Bearer literal", ValueFrom: fromSecret("flags-token", "authorization")}},
			want: []Header{{Name: "Authorization",
				FromSecret: &SecretKey{Namespace: "shop", Name: "flags-token", Key: "authorization"}}},
		},
		{
			name:      "the order is kept",
			namespace: "shop",
			headers: []v1beta1.HTTPHeader{
				{Name: "X-B", Value: "2"},
				{Name: "Authorization", ValueFrom: fromSecret("flags-token", "authorization")},
				{Name: "X-A", Value: "1"},
				{Name: "X-B", Value: "3"},
			},
			want: []Header{
				{Name: "X-B", Value: "2"},
				{Name: "Authorization", FromSecret: &SecretKey{Namespace: "shop", Name: "flags-token", Key: "authorization"}},
				{Name: "X-A", Value: "1"},
				{Name: "X-B", Value: "3"},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := HeadersOf(tt.namespace, tt.headers)
			if got == nil {
				t.Fatalf("HeadersOf = nil, want an empty non-nil slice")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("HeadersOf(%q, ...) (-want +got):\n%s", tt.namespace, diff)
			}
		})
	}
}

// TestHeadersOfSecretKeysApart checks that each header gets a SecretKey of
// its own: the prober reads them one by one, and a shared pointer would
// send one Secret's value under every name.
func TestHeadersOfSecretKeysApart(t *testing.T) {
	got := HeadersOf("shop", []v1beta1.HTTPHeader{
		{Name: "A", ValueFrom: &v1beta1.HeaderValueSource{SecretKeyRef: v1beta1.SecretKeySelector{Name: "s", Key: "a"}}},
		{Name: "B", ValueFrom: &v1beta1.HeaderValueSource{SecretKeyRef: v1beta1.SecretKeySelector{Name: "s", Key: "b"}}},
	})
	if len(got) != 2 || got[0].FromSecret == got[1].FromSecret {
		t.Fatalf("HeadersOf = %+v, want two headers with SecretKeys of their own", got)
	}
	if got[0].FromSecret.Key != "a" || got[1].FromSecret.Key != "b" {
		t.Errorf("keys = %q, %q; want a, b", got[0].FromSecret.Key, got[1].FromSecret.Key)
	}
}
