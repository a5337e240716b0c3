package v1beta1

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// anyOfIngress is validDynamicIngress following entries with anyOf.
func anyOfIngress(entries ...v1beta1.StateEntry) *v1beta1.DynamicIngress {
	di := validDynamicIngress()
	di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, entries
	return di
}

// TestValidateFollowedStates: exactly one of a single state (with
// expected), anyOf and allOf, and each entry of a list checked as a single
// state is, at the entry's path.
func TestValidateFollowedStates(t *testing.T) {
	const dnsLabel = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	anyOf := field.NewPath("spec", "anyOf")
	allOf := field.NewPath("spec", "allOf")
	platform := builders.ClusterEntry("platform", "global-killswitch", "503")
	window := builders.Entry("window", "shop-maintenance", "200")
	nine := make([]v1beta1.StateEntry, 9)
	for i := range nine {
		nine[i] = builders.Entry(fmt.Sprintf("e%d", i), "s", "200")
	}
	tests := []struct {
		name   string
		mutate func(*v1beta1.DynamicIngress)
		want   field.ErrorList
	}{
		{name: "anyOf", mutate: func(di *v1beta1.DynamicIngress) {
			di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{platform, window}
		}},
		{name: "allOf", mutate: func(di *v1beta1.DynamicIngress) {
			di.Spec.State, di.Spec.Expected, di.Spec.AllOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{platform, window}
		}},
		{name: "allOf of 8 entries", mutate: func(di *v1beta1.DynamicIngress) {
			di.Spec.State, di.Spec.Expected, di.Spec.AllOf = "", v1beta1.ExpectedResponse{}, nine[:8]
		}},
		{
			name:   "anyOf beside state and expected",
			mutate: func(di *v1beta1.DynamicIngress) { di.Spec.AnyOf = []v1beta1.StateEntry{platform} },
			want: field.ErrorList{field.Forbidden(anyOf,
				"anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both, and state and expected are set")},
		},
		{
			name: "allOf beside stateRef",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.Expected, di.Spec.StateRef = "", v1beta1.ExpectedResponse{}, &v1beta1.StateReference{Name: "flag"}
				di.Spec.AllOf = []v1beta1.StateEntry{window}
			},
			want: field.ErrorList{field.Forbidden(allOf,
				"anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both, and stateRef is set")},
		},
		{
			name: "anyOf beside expected alone",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.AnyOf = "", []v1beta1.StateEntry{window}
			},
			want: field.ErrorList{field.Forbidden(anyOf,
				"anyOf and allOf replace state, stateRef and expected: set a list or a single state, not both, and expected is set")},
		},
		{
			name: "anyOf and allOf",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.Expected = "", v1beta1.ExpectedResponse{}
				di.Spec.AnyOf, di.Spec.AllOf = []v1beta1.StateEntry{platform}, []v1beta1.StateEntry{window}
			},
			want: field.ErrorList{field.Forbidden(allOf, "at most one of anyOf and allOf may be set, and anyOf is set")},
		},
		{
			name: "state without expected",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.Expected = v1beta1.ExpectedResponse{}
			},
			want: field.ErrorList{field.Required(field.NewPath("spec", "expected"), "at least one of statusCode, body and expression must be set")},
		},
		{
			name: "an empty anyOf",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{}
			},
			want: field.ErrorList{field.Required(anyOf, "1 to 8 entries, each a state or stateRef with its expected")},
		},
		{
			name: "9 entries",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, nine
			},
			want: field.ErrorList{field.TooMany(anyOf, 9, 8)},
		},
		{
			name: "a duplicate name",
			mutate: func(di *v1beta1.DynamicIngress) {
				di.Spec.State, di.Spec.Expected, di.Spec.AllOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{window, platform, window}
			},
			want: field.ErrorList{field.Duplicate(allOf.Index(2).Child("name"), "window")},
		},
		{
			name: "a name missing, and one not a DNS label",
			mutate: func(di *v1beta1.DynamicIngress) {
				a, b := window, platform
				a.Name, b.Name = "", "Platform.Switch"
				di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{a, b}
			},
			want: field.ErrorList{
				field.Required(anyOf.Index(0).Child("name"), "a DNS label naming the entry in status.states, conditions and events"),
				field.Invalid(anyOf.Index(1).Child("name"), "Platform.Switch", dnsLabel),
			},
		},
		{
			name: "an entry with both state and stateRef, and one with neither",
			mutate: func(di *v1beta1.DynamicIngress) {
				both, neither := platform, window
				both.State, neither.State = "flag", ""
				di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{both, neither}
			},
			want: field.ErrorList{
				field.Forbidden(anyOf.Index(0).Child("stateRef"), "exactly one of state and stateRef must be set, and state is set"),
				field.Required(anyOf.Index(1), "exactly one of state and stateRef must be set: state names a DynamicIngressState in the same namespace, stateRef a state of either kind"),
			},
		},
		{
			name: "an entry's stateRef of an unknown kind",
			mutate: func(di *v1beta1.DynamicIngress) {
				e := platform
				e.StateRef = &v1beta1.StateReference{Kind: "Flag", Name: "global"}
				di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{window, e}
			},
			want: field.ErrorList{field.NotSupported(anyOf.Index(1).Child("stateRef", "kind"), v1beta1.StateKind("Flag"),
				[]v1beta1.StateKind{v1beta1.StateKindNamespaced, v1beta1.StateKindCluster})},
		},
		{
			name: "an entry's state not a name",
			mutate: func(di *v1beta1.DynamicIngress) {
				e := window
				e.State = "Shop_Maintenance"
				di.Spec.State, di.Spec.Expected, di.Spec.AllOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{e}
			},
			want: field.ErrorList{field.Invalid(allOf.Index(0).Child("state"), "Shop_Maintenance",
				"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")},
		},
		{
			name: "an entry's expected empty, another's status code 600 and bodyMatch unknown",
			mutate: func(di *v1beta1.DynamicIngress) {
				empty, bad := platform, window
				empty.Expected = v1beta1.ExpectedResponse{}
				bad.Expected = v1beta1.ExpectedResponse{StatusCode: "600", BodyMatch: "Fuzzy"}
				di.Spec.State, di.Spec.Expected, di.Spec.AllOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{empty, bad}
			},
			want: field.ErrorList{
				field.Required(allOf.Index(0).Child("expected"), "at least one of statusCode, body and expression must be set"),
				field.Invalid(allOf.Index(1).Child("expected", "statusCode"), "600", "must be an HTTP status code: three digits from 100 to 599"),
				field.NotSupported(allOf.Index(1).Child("expected", "bodyMatch"), v1beta1.BodyMatch("Fuzzy"), []v1beta1.BodyMatch{v1beta1.BodyMatchExact, v1beta1.BodyMatchContains}),
			},
		},
		{
			name: "an entry's expression that does not compile",
			mutate: func(di *v1beta1.DynamicIngress) {
				e := window
				e.Expected = v1beta1.ExpectedResponse{Expression: `response.code == "503"`}
				di.Spec.State, di.Spec.Expected, di.Spec.AnyOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{platform, e}
			},
			want: field.ErrorList{field.Invalid(anyOf.Index(1).Child("expected", "expression"), `response.code == "503"`,
				"compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to '(int, string)'\n | response.code == \"503\"\n | ..............^")},
		},
		{
			name: "an entry's expression over the cost budget",
			mutate: func(di *v1beta1.DynamicIngress) {
				e := window
				e.Expected = v1beta1.ExpectedResponse{Expression: `response.json.a.all(x, response.json.b.all(y, response.json.c.all(z, x == y)))`}
				di.Spec.State, di.Spec.Expected, di.Spec.AllOf = "", v1beta1.ExpectedResponse{}, []v1beta1.StateEntry{e}
			},
			want: field.ErrorList{field.Invalid(allOf.Index(0).Child("expected", "expression"), `response.json.a.all(x, response.json.b.all(y, response.json.c.all(z, x == y)))`,
				"estimated cost beyond any bound exceeds the limit 10000000: the cost is estimated for a response body of up to 3145728 bytes; simplify the expression, e.g. avoid nested loops over response.json")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			di := validDynamicIngress()
			tt.mutate(di)
			if diff := cmp.Diff(tt.want, ValidateDynamicIngress(nil, di, probe.Guard{})); diff != "" {
				t.Errorf("DynamicIngress (-want +got):\n%s", diff)
			}
			// A DynamicHTTPRoute names its states with the same fields.
			dhr := builders.DynamicHTTPRoute(di.Namespace, di.Name).Passive(builders.RouteTo("shop.example.com", "web")).Obj()
			dhr.Spec.Target = di.Spec.Target
			dhr.Spec.State, dhr.Spec.StateRef, dhr.Spec.Expected = di.Spec.State, di.Spec.StateRef, di.Spec.Expected
			dhr.Spec.AnyOf, dhr.Spec.AllOf = di.Spec.AnyOf, di.Spec.AllOf
			if diff := cmp.Diff(tt.want, ValidateDynamicHTTPRoute(nil, dhr, probe.Guard{})); diff != "" {
				t.Errorf("DynamicHTTPRoute (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateAdmittedEntries: a stateRef to a cluster state that does not
// admit the namespace is refused on that stateRef, for the single state as
// for each entry of a list; one the switch followed before is not checked
// again.
func TestValidateAdmittedEntries(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"tier": "internal"}}},
		builders.FixedState("", "public", "200", "").Cluster().FollowersMatching(map[string]string{"tier": "public"}).Obj(),
		builders.FixedState("", "edge", "200", "").Cluster().FollowersMatching(map[string]string{"tier": "edge"}).Obj(),
		builders.FixedState("", "everyone", "200", "").Cluster().FollowersAll().Obj(),
	).Build()
	v := SwitchValidator[*v1beta1.DynamicIngress]{Kind: target.Ingress{}, Reader: reader}
	refused := func(state string) string {
		return fmt.Sprintf(`ClusterDynamicIngressState %q does not admit namespace "shop": its spec.followers.namespaces admits the namespaces whose labels match "tier=%s"`, state, state)
	}
	single := func(state string) *v1beta1.DynamicIngress {
		di := validDynamicIngress()
		di.Spec.State, di.Spec.StateRef = "", &v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: state}
		return di
	}
	allOf := func(entries ...v1beta1.StateEntry) *v1beta1.DynamicIngress {
		di := anyOfIngress()
		di.Spec.AnyOf, di.Spec.AllOf = nil, entries
		return di
	}
	tests := []struct {
		name   string
		sw     *v1beta1.DynamicIngress
		before *v1beta1.DynamicIngress
		want   field.ErrorList
	}{
		{name: "a single stateRef", sw: single("public"),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "stateRef"), refused("public"))}},
		{name: "a single stateRef admitted", sw: single("everyone")},
		{name: "an anyOf entry", sw: anyOfIngress(builders.Entry("local", "flag", "200"), builders.ClusterEntry("platform", "public", "503")),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "anyOf").Index(1).Child("stateRef"), refused("public"))}},
		{name: "allOf entries, each refused on its own path",
			sw: allOf(builders.ClusterEntry("edge", "edge", "503"), builders.ClusterEntry("all", "everyone", "503"), builders.ClusterEntry("public", "public", "503")),
			want: field.ErrorList{
				field.Forbidden(field.NewPath("spec", "allOf").Index(0).Child("stateRef"), refused("edge")),
				field.Forbidden(field.NewPath("spec", "allOf").Index(2).Child("stateRef"), refused("public")),
			}},
		{name: "an entry whose cluster state does not exist yet", sw: anyOfIngress(builders.ClusterEntry("later", "later", "503"))},
		{name: "an entry to a namespaced state of a cluster state's name", sw: anyOfIngress(builders.Entry("public", "public", "503"))},
		{name: "an update keeping the refused state, as a single state before",
			sw: anyOfIngress(builders.ClusterEntry("platform", "public", "503")), before: single("public")},
		{name: "an update adding a refused entry",
			sw:     anyOfIngress(builders.ClusterEntry("platform", "public", "503"), builders.ClusterEntry("edge", "edge", "503")),
			before: anyOfIngress(builders.ClusterEntry("platform", "public", "503")),
			want:   field.ErrorList{field.Forbidden(field.NewPath("spec", "anyOf").Index(1).Child("stateRef"), refused("edge"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []v1beta1.FollowedEntry
			if tt.before != nil {
				before = tt.before.SwitchSpec().Entries()
			}
			if diff := cmp.Diff(tt.want, v.validateAdmitted(context.Background(), tt.sw, before)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
