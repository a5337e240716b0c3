package main

import (
	"fmt"
	"strings"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// amplifyingState reduces a 1 MiB answer with a nest of maps over literal
// lists: cheap for CEL, which shares the body a thousand times over, and a
// gigabyte once written out. Its token is written in the state, which the
// webhook warns about.
const amplifyingState = `apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata:
  name: runaway
spec:
  probe:
    url: %s
    interval: 1s
    timeout: 1s
    headers:
    - name: Authorization
      value: Bearer written-in-the-state
    bodyExpression: '[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, response.body)))'
`

// tenantIsolation shows that one state's runaway expression fails that
// state alone while the kill switch still flips everything else.
func tenantIsolation(k *kubectl, big *controlplane.StatusAPI) error {
	title("8. One state cannot take the manager down")
	say("A state probes a 1 MiB answer every second and reduces it with a nest of maps: cheap for CEL,")
	say("a gigabyte of JSON once written out. Its result is built under a 1 MiB budget, so the probe fails")
	say("with reason expression; its token is written in the state, so the apply also warns:")
	if err := k.showApply(fmt.Sprintf(amplifyingState, big.URL), "cat runaway-state.yaml"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=condition=Ready=False", "dis/runaway"); err != nil {
		return err
	}
	if err := k.showContaining([]string{"bodyExpression failed: the result is too large: it is longer than 1048576 bytes or holds more than 16384 values"},
		"get", "-n", namespace, "dis", "runaway", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}{"\n"}`); err != nil {
		return err
	}
	say("Another team's namespace, %s, holds %d switches, each with a slow expression of its own", slowTenant, slowSwitches)
	say("(about 80ms each, none shared). Its state flips too, right before the kill switch: its")
	say("expressions are evaluated in its own turns, at most a quarter of a core, and the switch workers")
	say("never run them, so every other switch still flips at once:")
	if err := k.show("create", "namespace", slowTenant); err != nil {
		return err
	}
	if err := k.showApplyIn(slowTenant, slowTenantManifest(), fmt.Sprintf("cat slow-expressions.yaml   # state flag and %d DynamicIngresses, expected.expression: size([0,...,9].map(a, ...)) == 7", slowSwitches)); err != nil {
		return err
	}
	if err := k.waitQuietIn(slowTenant, "--for=condition=Ready", "dynamicingress", "--all"); err != nil {
		return err
	}
	if err := k.show("patch", "-n", slowTenant, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`); err != nil {
		return err
	}
	if err := k.show("patch", "-n", namespace, "dis", "killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`); err != nil {
		return err
	}
	if err := k.showContaining([]string{"all 3 switches in shape (2 active, 1 passive)"}, "dynamic", "wait", "killswitch", "-n", namespace, "--timeout=60s"); err != nil {
		return err
	}
	say("%s's switches are decided in that namespace's own turns; kubectl dynamic wait computes the", slowTenant)
	say("same decisions (every expression is false, so none of them flips):")
	if err := k.showContaining([]string{fmt.Sprintf("all %d switches in shape", slowSwitches)}, "dynamic", "wait", "flag", "-n", slowTenant, "--timeout=60s"); err != nil {
		return err
	}
	if err := k.show("patch", "-n", namespace, "dis", "killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`); err != nil {
		return err
	}
	if err := k.showContaining([]string{"all 3 switches in shape"}, "dynamic", "wait", "killswitch", "-n", namespace, "--timeout=60s"); err != nil {
		return err
	}
	return k.show("delete", "-n", namespace, "dis", "runaway")
}

// bigAnswer is the 1 MiB answer the runaway state probes.
var bigAnswer = strings.Repeat("x", 1<<20-64)

// The slow tenant of step 8: a namespace whose switches each hold a
// distinct expected expression that runs for about 80ms.
const (
	slowTenant   = "slow-tenant"
	slowSwitches = 20
)

// slowTenantManifest is a fixed state flag answering 503 and slowSwitches
// DynamicIngresses expecting 200 and a slow expression of their own, each
// distinct (a five-level map nest, stopped at its run-time cost limit).
func slowTenantManifest() string {
	var b strings.Builder
	b.WriteString(`apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata: {name: flag}
spec: {fixedResponse: {status: "503"}}
`)
	nest := "response.code + %d"
	for i := 4; i >= 0; i-- {
		nest = fmt.Sprintf("[0,1,2,3,4,5,6,7,8,9].map(%c, %s)", 'a'+i, nest)
	}
	for i := range slowSwitches {
		fmt.Fprintf(&b, `---
apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngress
metadata: {name: app-%02[1]d}
spec:
  target: {name: app-%02[1]d}
  state: flag
  expected: {statusCode: "200", expression: 'size(%[2]s) == 7'}
  passiveIngress:
    template:
      spec: {rules: [{host: app-%02[1]d.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}}]}
  activeIngress:
    template:
      spec: {rules: [{host: app-%02[1]d.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: sorry-page, port: {number: 80}}}}]}}]}
`, i, fmt.Sprintf(nest, i))
	}
	return b.String()
}
