package v1beta1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// auditedIngress is a DynamicIngress shop/web with override (none when
// ""), the annotations given and label team=shop.
func auditedIngress(override v1beta1.Mode, annotations map[string]string) *v1beta1.DynamicIngress {
	sw := builders.DynamicIngress("shop", "web").State("flag").ExpectCode("503").
		Passive(builders.IngressTo("web.example.com", "web")).Override(override).Obj()
	sw.Labels = map[string]string{"team": "shop"}
	sw.Annotations = annotations
	return sw
}

// auditedRoute is auditedIngress as a DynamicHTTPRoute.
func auditedRoute(override v1beta1.Mode, annotations map[string]string) *v1beta1.DynamicHTTPRoute {
	sw := builders.DynamicHTTPRoute("shop", "web").State("flag").ExpectCode("503").
		Passive(builders.RouteTo("web.example.com", "web")).Override(override).Obj()
	sw.Annotations = annotations
	return sw
}

// audit is the two audit annotations, and the others given as key, value.
func audit(by, at string, others ...string) map[string]string {
	out := map[string]string{OverrideByAnnotation: by, OverrideAtAnnotation: at}
	for i := 0; i+1 < len(others); i += 2 {
		out[others[i]] = others[i+1]
	}
	return out
}

// TestAuditOverride: a change of spec.override (set on create; set,
// changed or removed on update) writes the request's user and now into the
// audit annotations, over anything the user wrote there; otherwise they
// stay what they were, except in an update that edits them alone, left as
// it came for the validating webhook to refuse.
func TestAuditOverride(t *testing.T) {
	// To the microsecond: two changes within a second read apart.
	now := time.Date(2026, 11, 28, 18, 4, 5, 123456789, time.FixedZone("JST", 9*3600))
	const at = "2026-11-28T09:04:05.123456Z"
	const before = "2026-11-01T00:00:00Z"
	relabelled := func(sw *v1beta1.DynamicIngress) *v1beta1.DynamicIngress {
		sw.Labels["tier"] = "public"
		return sw
	}
	respecced := func(sw *v1beta1.DynamicIngress) *v1beta1.DynamicIngress {
		sw.Spec.FailurePolicy = v1beta1.FailurePolicyPassive
		return sw
	}
	tests := []struct {
		name    string
		old, sw target.Switch
		want    map[string]string
	}{
		{"create with an override", nil, auditedIngress(v1beta1.ModeActive, nil), audit("alice", at)},
		{"create with an override and audit annotations of the user's", nil,
			auditedIngress(v1beta1.ModeActive, audit("mallory", before, "note", "x")), audit("alice", at, "note", "x")},
		{"create without an override, no annotations", nil, auditedIngress("", nil), nil},
		{"create without an override drops the user's audit annotations", nil,
			auditedIngress("", audit("mallory", before, "note", "x")), map[string]string{"note": "x"}},
		{"override set", auditedIngress("", nil), auditedIngress(v1beta1.ModePassive, nil), audit("alice", at)},
		{"override changed", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			auditedIngress(v1beta1.ModePassive, audit("bob", before)), audit("alice", at)},
		{"override removed", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			auditedIngress("", audit("bob", before)), audit("alice", at)},
		{"override removed, the user's values overwritten", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			auditedIngress("", audit("mallory", "2030-01-01T00:00:00Z")), audit("alice", at)},
		{"a DynamicHTTPRoute's override set", auditedRoute("", nil), auditedRoute(v1beta1.ModeActive, nil), audit("alice", at)},
		{"nothing changed", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			auditedIngress(v1beta1.ModeActive, audit("bob", before)), audit("bob", before)},
		{"another spec change keeps them", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			respecced(auditedIngress(v1beta1.ModeActive, audit("bob", before))), audit("bob", before)},
		{"another spec change restores them", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			respecced(auditedIngress(v1beta1.ModeActive, audit("mallory", before))), audit("bob", before)},
		{"another spec change removes a forged one", auditedIngress("", nil),
			respecced(auditedIngress("", audit("mallory", before))), nil},
		{"a label change restores them", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			relabelled(auditedIngress(v1beta1.ModeActive, map[string]string{OverrideByAnnotation: "mallory"})), audit("bob", before)},
		{"an edit of them alone is left for validation", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			auditedIngress(v1beta1.ModeActive, audit("mallory", before)), audit("mallory", before)},
		{"an edit of them alone on a switch never overridden is left for validation", auditedIngress("", nil),
			auditedIngress("", audit("mallory", before)), audit("mallory", before)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			AuditOverride(tt.old, tt.sw, "alice", now)
			if diff := cmp.Diff(tt.want, tt.sw.GetAnnotations()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateOverrideAudit: an update that edits the audit annotations
// without changing spec.override is refused, naming each annotation.
func TestValidateOverrideAudit(t *testing.T) {
	const before = "2026-11-01T00:00:00Z"
	forbidden := func(key string) string {
		return "metadata.annotations[" + key + "]: Forbidden: set by the admission webhook when spec.override changes; it cannot be edited"
	}
	tests := []struct {
		name    string
		old, sw target.Switch
		want    []string
	}{
		{"unchanged", auditedIngress(v1beta1.ModeActive, audit("bob", before)), auditedIngress(v1beta1.ModeActive, audit("bob", before)), nil},
		{"override-by edited", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			auditedIngress(v1beta1.ModeActive, audit("mallory", before)), []string{forbidden(OverrideByAnnotation)}},
		{"both edited on a DynamicHTTPRoute", auditedRoute(v1beta1.ModeActive, audit("bob", before)),
			auditedRoute(v1beta1.ModeActive, audit("mallory", "2030-01-01T00:00:00Z")),
			[]string{forbidden(OverrideByAnnotation), forbidden(OverrideAtAnnotation)}},
		{"override-at removed", auditedIngress(v1beta1.ModeActive, audit("bob", before)),
			auditedIngress(v1beta1.ModeActive, map[string]string{OverrideByAnnotation: "bob"}), []string{forbidden(OverrideAtAnnotation)}},
		{"added to a switch never overridden", auditedIngress("", nil),
			auditedIngress("", map[string]string{OverrideByAnnotation: "mallory"}), []string{forbidden(OverrideByAnnotation)}},
		{"written with a change of the override", auditedIngress("", nil), auditedIngress(v1beta1.ModeActive, audit("alice", before)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, errorTexts(validateOverrideAudit(tt.old, tt.sw))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
