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
	say("Meanwhile every other switch still flips at once:")
	if err := k.show("patch", "-n", namespace, "dis", "killswitch", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`); err != nil {
		return err
	}
	if err := k.showContaining([]string{"all 3 switches in shape (2 active, 1 passive)"}, "dynamic", "wait", "killswitch", "-n", namespace, "--timeout=60s"); err != nil {
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
