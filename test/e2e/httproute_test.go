package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func dynamicHTTPRouteManifest(ns, name, state string) string {
	return fmt.Sprintf(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicHTTPRoute
metadata: {namespace: %[1]s, name: %[2]s}
spec:
  target: {name: %[2]s}
  state: %[3]s
  expected: {statusCode: "503"}
  passiveRoute:
    template:
      spec:
        parentRefs: [{name: public}]
        hostnames: [%[2]s.example.com]
        rules: [{backendRefs: [{name: web, port: 80}]}]
  activeRoute:
    template:
      spec:
        parentRefs: [{name: public}]
        hostnames: [%[2]s.example.com]
        rules: [{filters: [{type: RequestRedirect, requestRedirect: {hostname: status.example.com, statusCode: 302}}]}]
`, ns, name, state)
}

// TestDynamicHTTPRouteWithKubectl: apply, list, flip and refuse, as a user
// does with kubectl.
func TestDynamicHTTPRouteWithKubectl(t *testing.T) {
	ns := newNamespace(t, "routes")
	kubectl(t, stateManifest(ns, "flag", "200"), "apply", "-f", "-")
	out := kubectl(t, dynamicHTTPRouteManifest(ns, "shop", "flag"), "apply", "-f", "-")
	if want := "dynamichttproute.ingress.dynamicingress.io/shop created"; !strings.Contains(out, want) {
		t.Errorf("kubectl apply printed %q, want %q", out, want)
	}
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "dhr/shop", "--timeout=30s")
	dhr := tables(kubectl(t, "", "get", "-n", ns, "dhr", "shop"))[0]
	if got := strings.Join(dhr.header, " "); got != "NAME TARGET STATE STATEREF ACTIVE READY AGE" {
		t.Errorf("kubectl get dhr header = %q", got)
	}
	if got := dhr.cells("NAME", "TARGET", "STATE", "STATEREF", "ACTIVE", "READY"); !slices.Equal(got[0], []string{"shop", "shop", "flag", "", "False", "True"}) {
		t.Errorf("kubectl get dhr = %q, want shop shop flag (no STATEREF) False True", got[0])
	}
	if out := kubectl(t, "", "get", "-n", ns, "dynamic"); !strings.Contains(out, "dynamichttproute.ingress.dynamicingress.io/shop") {
		t.Errorf("kubectl get dynamic does not list the DynamicHTTPRoute:\n%s", out)
	}
	backend := "jsonpath={.spec.rules[0].backendRefs[0].name}{.spec.rules[0].filters[0].type}"
	if got := kubectl(t, "", "get", "-n", ns, "httproute", "shop", "-o", backend); got != "web" {
		t.Errorf("passive HTTPRoute rule = %q, want web", got)
	}

	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Active", "dhr/shop", "--timeout=30s")
	kubectl(t, "", "wait", "-n", ns, "--for=jsonpath={.spec.rules[0].filters[0].type}=RequestRedirect", "httproute/shop", "--timeout=30s")

	copyWithTakenTarget := strings.Replace(dynamicHTTPRouteManifest(ns, "thief", "flag"), "target: {name: thief}", "target: {name: shop}", 1)
	_, stderr, err := runKubectl(copyWithTakenTarget, "apply", "-f", "-")
	want := `The DynamicHTTPRoute "thief" is invalid: spec.target: Invalid value: "` + ns + `/shop": DynamicHTTPRoute "shop" already targets HTTPRoute ` + ns + `/shop; each HTTPRoute has at most one DynamicHTTPRoute`
	if err == nil || !strings.Contains(stderr, want) {
		t.Errorf("kubectl apply of a DynamicHTTPRoute taking another's target: err %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
}
