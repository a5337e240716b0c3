package v1beta1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func TestServedSetOrChanged(t *testing.T) {
	served := func() *builders.ServedWrapper { return builders.Served("https://shop.example.com/", "503", "200") }
	tests := []struct {
		name    string
		old, sw *v1beta1.ServedCheck
		want    bool
	}{
		{"created without", nil, nil, false},
		{"created with", nil, served().Obj(), true},
		{"added", nil, served().Obj(), true},
		{"unchanged", served().Obj(), served().Obj(), false},
		{"removed", served().Obj(), nil, false},
		{"url changed", served().Obj(), builders.Served("https://other.example.com/", "503", "200").Obj(), true},
		{"a header added", served().Obj(), served().Header("X-Tenant", "shop").Obj(), true},
		{"a matcher changed", served().Obj(), builders.Served("https://shop.example.com/", "502", "200").Obj(), true},
		{"the period changed", served().Obj(), served().Period(2e9).Obj(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := servedSetOrChanged(tt.old, tt.sw); got != tt.want {
				t.Errorf("servedSetOrChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSinkSetOrChanged(t *testing.T) {
	notifier := func() *builders.NotifierWrapper {
		return builders.Notifier("shop", "oncall", "https://hooks.example.com/").State("killswitch")
	}
	tests := []struct {
		name   string
		old, n *v1beta1.DynamicIngressNotifier
		want   bool
	}{
		{"created", nil, notifier().Obj(), true},
		{"the states changed", notifier().Obj(), notifier().State("window").Obj(), false},
		{"the events changed", notifier().Obj(), notifier().Events(v1beta1.NotificationStateChanged).Obj(), false},
		{"the url changed", notifier().Obj(), builders.Notifier("shop", "oncall", "https://hooks.example.com/other").State("killswitch").Obj(), true},
		{"the format changed", notifier().Obj(), notifier().Slack().Obj(), true},
		{"a header added", notifier().Obj(), notifier().Header("X-Tenant", "shop").Obj(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sinkSetOrChanged(tt.old, tt.n); got != tt.want {
				t.Errorf("sinkSetOrChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequestsForbidden(t *testing.T) {
	for _, tt := range []struct {
		path   *field.Path
		source string
		want   string
	}{
		{field.NewPath("spec", "served"), servedRequests,
			`spec.served: Forbidden: a served check makes the manager send requests; it needs permission to create dynamicingressstates in namespace "shop"`},
		{field.NewPath("spec", "sink"), sinkRequests,
			`spec.sink: Forbidden: a notification sink makes the manager send requests; it needs permission to create dynamicingressstates in namespace "shop"`},
	} {
		if got := requestsForbidden(tt.path, tt.source, "shop").Error(); got != tt.want {
			t.Errorf("requestsForbidden = %q, want %q", got, tt.want)
		}
	}
}

// TestStateCreateReview: the review asks about the user exactly as the
// admission request names it, groups and extra included (an impersonating
// proxy's user is reviewed as that user, with its groups).
func TestStateCreateReview(t *testing.T) {
	user := authenticationv1.UserInfo{
		Username: "alice", UID: "u-1", Groups: []string{"oncall", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes.example.com": {"deploy"}},
	}
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "alice", UID: "u-1", Groups: []string{"oncall", "system:authenticated"},
		Extra: map[string]authorizationv1.ExtraValue{"scopes.example.com": {"deploy"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "shop", Verb: "create", Group: "ingress.dynamicingress.io", Version: "v1beta1", Resource: "dynamicingressstates",
		},
	}
	if diff := cmp.Diff(want, stateCreateReview(user, "shop").Spec); diff != "" {
		t.Errorf("stateCreateReview (-want +got):\n%s", diff)
	}
}
