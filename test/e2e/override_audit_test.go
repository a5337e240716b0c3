package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestOverrideAudit: a change of spec.override, by `kubectl dynamic
// override` or by kubectl patch, records in the switch's annotations the
// user the API server names (the suite's own, or one impersonated with
// --as) and when; kubectl annotate of those annotations alone is refused
// with the field path and why; a label change passes and leaves them be;
// removing the override records who removed it.
func TestOverrideAudit(t *testing.T) {
	ns := newNamespace(t, "override-audit")
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(),
		webIngress(ns, "shop", "flag").ExpectCode("503").YAML(),
		webRoute(ns, "route", "flag").ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di", "dhr")
	user := kubectl(t, "", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if user == "" {
		t.Fatal("kubectl auth whoami names no user")
	}

	// audit is the switch's override-by and override-at, after checking
	// that override-at is an RFC 3339 time in UTC, no earlier than since
	// (to the second) and no later than now.
	audit := func(kind, name string, since time.Time) (by, at string) {
		t.Helper()
		out := kubectl(t, "", "get", "-n", ns, kind, name, "-o",
			`jsonpath={.metadata.annotations.ingress\.dynamicingress\.io/override-by}|{.metadata.annotations.ingress\.dynamicingress\.io/override-at}`)
		by, at, _ = strings.Cut(out, "|")
		when, err := time.Parse(time.RFC3339, at)
		if err != nil || !strings.HasSuffix(at, "Z") || when.Before(since.Truncate(time.Second)) || when.After(time.Now()) {
			t.Errorf("%s %s: override-at %q, want an RFC 3339 time in UTC between %s and now", kind, name, at, since.UTC().Format(time.RFC3339))
		}
		return by, at
	}

	start := time.Now()
	plugin(t, "override", "-n", ns, "di/shop", "active")
	if by, _ := audit("di", "shop", start); by != user {
		t.Errorf("after kubectl dynamic override di/shop active: override-by %q, want %q", by, user)
	}

	changed := time.Now()
	plugin(t, "override", "-n", ns, "di/shop", "passive", "--as=oncall-alice", "--as-group=system:masters")
	by, at := audit("di", "shop", changed)
	if by != "oncall-alice" {
		t.Errorf("after kubectl dynamic override di/shop passive --as=oncall-alice: override-by %q, want oncall-alice", by)
	}

	_, stderr, err := runKubectl("", "annotate", "-n", ns, "di", "shop", "--overwrite", "ingress.dynamicingress.io/override-by=mallory")
	want := `The DynamicIngress "shop" is invalid: metadata.annotations[ingress.dynamicingress.io/override-by]: Forbidden: set by the admission webhook when spec.override changes; it cannot be edited` + "\n"
	if err == nil || stderr != want {
		t.Errorf("kubectl annotate override-by alone: err %v, stderr %q; want it refused with %q", err, stderr, want)
	}
	kubectl(t, "", "label", "-n", ns, "di", "shop", "team=shop")
	if gotBy, gotAt := audit("di", "shop", changed); gotBy != "oncall-alice" || gotAt != at {
		t.Errorf("after a refused annotate and a label: override-by %q, override-at %q; want oncall-alice, %s", gotBy, gotAt, at)
	}

	removed := time.Now()
	plugin(t, "override", "-n", ns, "di/shop", "none")
	if by, _ := audit("di", "shop", removed); by != user {
		t.Errorf("after kubectl dynamic override di/shop none: override-by %q, want %q", by, user)
	}

	patched := time.Now()
	kubectl(t, "", "patch", "-n", ns, "dhr", "route", "--type=merge", "-p", `{"spec":{"override":"Passive"}}`, "--as=release-bot", "--as-group=system:masters")
	if by, _ := audit("dhr", "route", patched); by != "release-bot" {
		t.Errorf("after kubectl patch of the DynamicHTTPRoute's spec.override --as=release-bot: override-by %q, want release-bot", by)
	}
	_, stderr, err = runKubectl("", "annotate", "-n", ns, "dhr", "route", "ingress.dynamicingress.io/override-at-")
	want = `The DynamicHTTPRoute "route" is invalid: metadata.annotations[ingress.dynamicingress.io/override-at]: Forbidden: set by the admission webhook when spec.override changes; it cannot be edited` + "\n"
	if err == nil || stderr != want {
		t.Errorf("kubectl annotate removing override-at alone: err %v, stderr %q; want it refused with %q", err, stderr, want)
	}
}
