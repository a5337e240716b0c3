package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// recipeFile is the recipe the demo applies, pointed at the stand-in.
const recipeFile = "config/samples/recipes/prometheus-killswitch.yaml"

// errorRatioKillSwitch applies the Prometheus kill-switch recipe against the
// stand-in, raises the error ratio and watches the storefront go to the
// sorry page and come back, with the state written only when the ratio
// changes.
func errorRatioKillSwitch(k *kubectl, prom *controlplane.Prometheus) error {
	title("7. An automatic kill switch: a Prometheus error ratio over 5% sends the storefront to the sorry page")
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), recipeFile))
	if err != nil {
		return err
	}
	manifest := strings.Replace(string(raw), "http://prometheus.monitoring.svc:9090", "http://"+prom.Addr, 1)
	manifest = strings.Replace(manifest, "interval: 15s", "interval: 1s", 1)
	manifest = strings.Replace(manifest, "timeout: 5s", "timeout: 500ms", 1)
	say("%s, with its URL pointed at the stand-in and probed every second:", recipeFile)
	if err := k.showApply(manifest, "sed -e 's|http://prometheus.monitoring.svc:9090|http://"+prom.Addr+"|' -e 's|interval: 15s|interval: 1s|' -e 's|timeout: 5s|timeout: 500ms|' "+recipeFile); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.status.body}=0.004", "dis/storefront-error-ratio"); err != nil {
		return err
	}
	say("Every answer carries a new timestamp; bodyExpression records the ratio alone (BODY),")
	say("so the state's status is written when the ratio changes, not at every probe:")
	if err := k.show("get", "-n", namespace, "dis", "storefront-error-ratio", "-o", "wide"); err != nil {
		return err
	}
	prom.Set("0.31")
	say("The error ratio rises to 0.31; three answers in a row (successThreshold: 3) and it counts:")
	if err := k.waitQuiet("--for=condition=Active", "di/storefront-auto-killswitch"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "ingress", "storefront-auto", "-o", "custom-columns=NAME:.metadata.name,BACKEND:.spec.rules[0].http.paths[0].backend.service.name"); err != nil {
		return err
	}
	prom.Set("0.01")
	if err := k.waitQuiet("--for=condition=Active=False", "di/storefront-auto-killswitch"); err != nil {
		return err
	}
	say("The ratio fell to 0.01: the storefront is back.")
	return k.show("get", "-n", namespace, "ingress", "storefront-auto", "-o", "custom-columns=NAME:.metadata.name,BACKEND:.spec.rules[0].http.paths[0].backend.service.name")
}
