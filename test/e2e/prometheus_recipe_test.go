package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// TestPrometheusKillSwitchRecipe applies config/samples/recipes/
// prometheus-killswitch.yaml as a user would, with its URL pointed at a
// local server shaped like Prometheus (a new timestamp in every answer)
// and probes every second: the state records the ratio alone, one odd
// answer flips nothing, a lasting high ratio sends the storefront to the
// sorry page, and it comes back when the ratio falls.
func TestPrometheusKillSwitchRecipe(t *testing.T) {
	prom, err := controlplane.StartPrometheus("127.0.0.1:0", "0.02")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = prom.Close() }()
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config/samples/recipes/prometheus-killswitch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := regexp.MustCompile(`http://prometheus\.monitoring\.svc:9090`).ReplaceAllString(string(raw), "http://"+prom.Addr)
	manifest = strings.Replace(manifest, "interval: 15s", "interval: 1s", 1)
	manifest = strings.Replace(manifest, "timeout: 5s", "timeout: 500ms", 1)
	if manifest == string(raw) || !strings.Contains(manifest, "interval: 1s") {
		t.Fatal("the recipe's probe URL or interval was not found: the test must follow the recipe")
	}
	ns := newNamespace(t, "prometheus")
	kubectl(t, manifest, "apply", "-n", ns, "-f", "-")

	// The recorded body is the ratio alone, shown by kubectl get -o wide.
	body := func() string {
		return kubectl(t, "", "get", "-n", ns, "dis", "storefront-error-ratio", "-o", "jsonpath={.status.body}")
	}
	waitFor(t, 20*time.Second, func() bool { return body() == "0.02" }, "the state records 0.02")
	wide := kubectl(t, "", "get", "-n", ns, "dis", "storefront-error-ratio", "-o", "wide")
	if !strings.Contains(wide, "BODY") || !strings.Contains(wide, "0.02") {
		t.Errorf("kubectl get dis -o wide:\n%s\nwant a BODY column with 0.02", wide)
	}
	kubectl(t, "", "wait", "-n", ns, "di", "storefront-auto-killswitch", "--for=condition=Ready", "--timeout=20s")
	backend := func() string {
		return kubectl(t, "", "get", "-n", ns, "ingress", "storefront-auto", "-o", "jsonpath={.spec.rules[0].http.paths[0].backend.service.name}")
	}
	updated := kubectl(t, "", "get", "-n", ns, "dis", "storefront-error-ratio", "-o", "jsonpath={.status.lastUpdateTime}")

	// One odd answer: nothing is recorded, nothing flips, and the
	// changing timestamps move nothing either.
	prom.Once("0.9")
	time.Sleep(4 * time.Second)
	if got := body(); got != "0.02" {
		t.Errorf("after one answer of 0.9 the state records %q, want 0.02", got)
	}
	if got := kubectl(t, "", "get", "-n", ns, "dis", "storefront-error-ratio", "-o", "jsonpath={.status.lastUpdateTime}"); got != updated {
		t.Errorf("lastUpdateTime moved from %s to %s while the ratio stayed 0.02", updated, got)
	}
	if got := backend(); got != "storefront" {
		t.Errorf("after a blip the Ingress serves %q, want storefront", got)
	}

	// A lasting high ratio flips; a low one flips back.
	prom.Set("0.31")
	kubectl(t, "", "wait", "-n", ns, "di", "storefront-auto-killswitch", "--for=condition=Active", "--timeout=20s")
	if got := backend(); got != "sorry-page" {
		t.Errorf("at 0.31 the Ingress serves %q, want sorry-page", got)
	}
	prom.Set("NaN")
	kubectl(t, "", "wait", "-n", ns, "di", "storefront-auto-killswitch", "--for=condition=Active=False", "--timeout=20s")
	if got := backend(); got != "storefront" {
		t.Errorf("with no traffic (NaN) the Ingress serves %q, want storefront", got)
	}
}

// waitFor polls cond every 200ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
