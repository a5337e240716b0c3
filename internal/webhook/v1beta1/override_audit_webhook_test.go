package v1beta1_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	webhookv1beta1 "github.com/dynamicingress/dynamic-ingress-operator/internal/webhook/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestOverrideAuditThroughTheAPIServer: through the API server and the
// webhook configurations' matchConditions, a change of spec.override
// records the request's user and the time in the audit annotations, over
// what the user wrote; an edit of those annotations alone reaches the
// validating webhook and is refused with its field path; a label change
// passes and leaves them as they were.
func TestOverrideAuditThroughTheAPIServer(t *testing.T) {
	ns := newNamespace(t)
	review := &authenticationv1.SelfSubjectReview{}
	if err := k8s.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	user := review.Status.UserInfo.Username
	if user == "" {
		t.Fatal("the API server names no user for this client")
	}

	sw := builders.DynamicIngress(ns, "web").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("web.example.com", "web")).Override(v1beta1.ModeActive).Obj()
	sw.Annotations = map[string]string{webhookv1beta1.OverrideByAnnotation: "mallory", "note": "kept"}
	start := time.Now().Add(-time.Second)
	if err := k8s.Create(ctx, sw); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	checkAudit := func(what string, after time.Time) (at string) {
		t.Helper()
		got := &v1beta1.DynamicIngress{}
		if err := k8s.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		at = got.Annotations[webhookv1beta1.OverrideAtAnnotation]
		when, err := time.Parse(time.RFC3339, at)
		if err != nil || when.Location() != time.UTC || when.Before(after.Truncate(time.Second)) || when.After(time.Now()) {
			t.Errorf("%s: override-at %q, want RFC 3339 in UTC, between %s and now", what, at, after.UTC().Format(time.RFC3339))
		}
		if got.Annotations[webhookv1beta1.OverrideByAnnotation] != user || got.Annotations["note"] != "kept" {
			t.Errorf("%s: annotations %v, want override-by %q and note kept", what, got.Annotations, user)
		}
		return at
	}
	at := checkAudit("created with an override", start)

	patch := func(body string) error {
		return k8s.Patch(ctx, &v1beta1.DynamicIngress{ObjectMeta: sw.ObjectMeta}, client.RawPatch(types.MergePatchType, []byte(body)))
	}
	err := patch(`{"metadata":{"annotations":{"ingress.dynamicingress.io/override-by":"mallory"}}}`)
	want := `admission webhook "vdynamicingress.ingress.dynamicingress.io" denied the request: DynamicIngress.ingress.dynamicingress.io "web" is invalid: metadata.annotations[ingress.dynamicingress.io/override-by]: Forbidden: set by the admission webhook when spec.override changes; it cannot be edited`
	if err == nil || err.Error() != want {
		t.Errorf("an edit of override-by alone: %v, want %q", err, want)
	}
	if err := patch(`{"metadata":{"labels":{"team":"shop"}}}`); err != nil {
		t.Errorf("a label change: %v", err)
	}
	if got := checkAudit("after the refused edit and a label change", start); got != at {
		t.Errorf("override-at moved from %q to %q without a change of spec.override", at, got)
	}

	removed := time.Now()
	if err := patch(`{"spec":{"override":null},"metadata":{"annotations":{"ingress.dynamicingress.io/override-by":"mallory"}}}`); err != nil {
		t.Fatal(err)
	}
	checkAudit("override removed", removed)

	route := builders.DynamicHTTPRoute(ns, "route").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("route.example.com", "web")).Obj()
	if err := k8s.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string(nil), route.Annotations); diff != "" {
		t.Errorf("a DynamicHTTPRoute created without an override has annotations (-want +got):\n%s", diff)
	}
	routePatch := func(body string) error {
		return k8s.Patch(ctx, &v1beta1.DynamicHTTPRoute{ObjectMeta: route.ObjectMeta}, client.RawPatch(types.MergePatchType, []byte(body)))
	}
	if err := routePatch(`{"spec":{"override":"Passive"}}`); err != nil {
		t.Fatal(err)
	}
	got := &v1beta1.DynamicHTTPRoute{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(route), got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[webhookv1beta1.OverrideByAnnotation] != user {
		t.Errorf("DynamicHTTPRoute override set: annotations %v, want override-by %q", got.Annotations, user)
	}
	err = routePatch(`{"metadata":{"annotations":{"ingress.dynamicingress.io/override-at":null}}}`)
	want = `admission webhook "vdynamichttproute.ingress.dynamicingress.io" denied the request: DynamicHTTPRoute.ingress.dynamicingress.io "route" is invalid: metadata.annotations[ingress.dynamicingress.io/override-at]: Forbidden: set by the admission webhook when spec.override changes; it cannot be edited`
	if err == nil || err.Error() != want {
		t.Errorf("a removal of override-at alone: %v, want %q", err, want)
	}
}
