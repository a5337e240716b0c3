package main

import (
	"fmt"
	"time"
)

// The app is down: the storefront follows a state of its pods' Service, so
// the sorry page comes by itself when none of them is ready.

// storefrontPodsManifest is the Service of the storefront's pods, its
// EndpointSlice (ready says whether the three pods are ready), and the
// state that follows it. This control plane has no kubelet and no
// EndpointSlice controller: the demo writes the slice itself, with
// addresses that nothing ever sends a request to (Traefik reaches the
// storefront through its ExternalName Service, and no probe names these).
// The delays are short for the demo; the defaults are 10s and 30s
// (docs/recipes.md, recipe 8).
func storefrontPodsManifest(ready bool) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: storefront-pods
spec:
  ports:
  - {name: http, port: 80}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: storefront-pods-1
  labels:
    kubernetes.io/service-name: storefront-pods
addressType: IPv4
ports:
- {name: http, port: 80}
endpoints:
- {addresses: [10.244.0.11], conditions: {ready: %[1]t}}
- {addresses: [10.244.0.12], conditions: {ready: %[1]t}}
- {addresses: [10.244.0.13], conditions: {ready: %[1]t}}
---
apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata:
  name: storefront-up
spec:
  service:
    name: storefront-pods
    minReady: 1
    unavailableAfter: 5s
    availableAfter: 5s
`, ready)
}

// storefrontAnyOf makes the storefront follow the kill switch OR its pods'
// state: the sorry page when either says 503.
const storefrontAnyOf = `{"spec":{"state":null,"expected":null,"anyOf":[` +
	`{"name":"killswitch","state":"killswitch","expected":{"statusCode":"503"}},` +
	`{"name":"app-down","state":"storefront-up","expected":{"statusCode":"503"}}]}}`

// readyPatch is the kubectl patch that sets the readiness of the three
// pods in their EndpointSlice, as the EndpointSlice controller would.
func readyPatch(ready bool) []string {
	ops := ""
	for i := range 3 {
		if i > 0 {
			ops += ","
		}
		ops += fmt.Sprintf(`{"op":"replace","path":"/endpoints/%d/conditions/ready","value":%t}`, i, ready)
	}
	return []string{"patch", "-n", namespace, "endpointslice", "storefront-pods-1", "--type", "json", "-p", "[" + ops + "]"}
}

// appDown shows the storefront going to its sorry page when its pods'
// Service has no ready endpoint, and back, through Traefik, with no one
// touching a state.
func appDown(k *kubectl, traffic *dataPlane) error {
	title("11. The app is down: the sorry page comes by itself, and goes")
	say("A state can follow a Service's ready endpoints: storefront-up answers 503 once the storefront's")
	say("pods (Service storefront-pods) have had no ready endpoint for unavailableAfter, and 200 once one")
	say("has been ready for availableAfter. (This control plane has no kubelet: the demo writes the pods'")
	say("EndpointSlice itself; nothing routes to those addresses.)")
	if err := k.showApply(storefrontPodsManifest(true), ""); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=jsonpath={.status.statusCode}=200", "dis/storefront-up"); err != nil {
		return err
	}
	say("The storefront now follows the kill switch OR its pods (spec.anyOf):")
	if err := k.show("patch", "-n", namespace, "di", "storefront", "--type", "merge", "-p", storefrontAnyOf); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=condition=Ready", "di/storefront"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "dis", "storefront-up"); err != nil {
		return err
	}

	fmt.Println()
	say("The storefront's pods all fail their readiness probes (a bad release): nobody touches a state.")
	if err := k.show(readyPatch(false)...); err != nil {
		return err
	}
	s := <-traffic.watchFor(sorryPage, time.Now())
	if s.err != nil {
		return s.err
	}
	say("Through Traefik, users got the sorry page %.1fs after the last pod went unready (unavailableAfter 5s): %s", s.after.Seconds(), s.seen)
	if err := k.show("get", "-n", namespace, "dis", "storefront-up", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].message}{\"\\n\"}"); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=condition=Active", "di/storefront"); err != nil {
		return err
	}
	if err := k.show("get", "-n", namespace, "di", "storefront", "-o", "jsonpath={.status.conditions[?(@.type==\"Active\")].message}{\"\\n\"}"); err != nil {
		return err
	}

	fmt.Println()
	say("The pods are ready again:")
	if err := k.show(readyPatch(true)...); err != nil {
		return err
	}
	s = <-traffic.watchFor(storefrontPage, time.Now())
	if s.err != nil {
		return s.err
	}
	say("Through Traefik, users got the storefront again %.1fs later (availableAfter 5s): %s", s.after.Seconds(), s.seen)
	return k.show("get", "-n", namespace, "dis", "storefront-up", "-o", "custom-columns=NAME:.metadata.name,MODE:.status.mode,CODE:.status.statusCode,HISTORY:.status.history[*].cause")
}
