package e2e

import (
	"strings"
	"testing"
	"time"
)

// ingressField is one field of an Ingress as kubectl shows it.
func ingressField(t *testing.T, ns, name, jsonpath string) string {
	t.Helper()
	return kubectl(t, "", "get", "-n", ns, "ingress", name, "-o", "jsonpath="+jsonpath)
}

// waitForField polls until jsonpath of kind/name reads want.
func waitForField(t *testing.T, ns, kind, name, jsonpath, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, err := runKubectl("", "get", "-n", ns, kind, name, "-o", "jsonpath="+jsonpath)
		if err == nil && out == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: %s = %q after 30s, want %q", kind, name, jsonpath, out, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const (
	backendPath   = "{.spec.rules[0].http.paths[0].backend.service.name}"
	managedByPath = `{.metadata.labels.app\.kubernetes\.io/managed-by}`
	ownerPath     = "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}"
	readyPath     = `{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}`
)

// TestHandEditsOfTheManagedIngress edits a managed Ingress by hand, as
// someone with kubectl would during an incident: what the template sets
// comes back, a deleted Ingress is created again, and an Ingress that no
// longer names its DynamicIngress as controller is left to whoever took
// it, without a fight.
func TestHandEditsOfTheManagedIngress(t *testing.T) {
	ns := newNamespace(t, "handedits")
	kubectl(t, stateManifest(ns, "flag", "503"), "apply", "-f", "-")
	// disowned follows a state of its own, flipped below.
	kubectl(t, stateManifest(ns, "disowned-flag", "503"), "apply", "-f", "-")
	names := []string{"edited", "deleted", "unlabelled", "disowned"}
	for _, name := range names {
		state := "flag"
		if name == "disowned" {
			state = "disowned-flag"
		}
		kubectl(t, dynamicIngressManifest(ns, name, name, state, "/"), "apply", "-f", "-")
	}
	for _, name := range names {
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "di/"+name, "--timeout=30s")
		if got := ingressField(t, ns, name, backendPath+" "+managedByPath+" "+ownerPath); got != "web dynamic-ingress-operator DynamicIngress/"+name+"/true" {
			t.Fatalf("ingress %s before the edit: backend, managed-by, owner = %q", name, got)
		}
	}

	t.Run("a changed backend is restored", func(t *testing.T) {
		uid := ingressField(t, ns, "edited", "{.metadata.uid}")
		kubectl(t, "", "patch", "-n", ns, "ingress", "edited", "--type", "json",
			"-p", `[{"op":"replace","path":"/spec/rules/0/http/paths/0/backend/service/name","value":"hand-edited"}]`)
		waitForField(t, ns, "ingress", "edited", backendPath, "web")
		if got := ingressField(t, ns, "edited", "{.metadata.uid}"); got != uid {
			t.Errorf("the Ingress was replaced (uid %s, was %s); want it restored in place", got, uid)
		}
	})

	t.Run("a deleted Ingress is created again", func(t *testing.T) {
		uid := ingressField(t, ns, "deleted", "{.metadata.uid}")
		kubectl(t, "", "delete", "-n", ns, "ingress", "deleted", "--wait=true")
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, _, err := runKubectl("", "get", "-n", ns, "ingress", "deleted", "-o", "jsonpath={.metadata.uid}")
			if err == nil && out != "" && out != uid {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ingress deleted was not created again within 30s (uid %q, the deleted one was %s)", out, uid)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := ingressField(t, ns, "deleted", backendPath+" "+managedByPath+" "+ownerPath); got != "web dynamic-ingress-operator DynamicIngress/deleted/true" {
			t.Errorf("the recreated Ingress: backend, managed-by, owner = %q", got)
		}
	})

	// The manager caches only Ingresses with the managed-by label: the
	// Ingress leaving that selection reaches it as a deletion (with its
	// ownerReference), and it reads the Ingress past its cache.
	t.Run("a removed managed-by label is restored", func(t *testing.T) {
		uid := ingressField(t, ns, "unlabelled", "{.metadata.uid}")
		kubectl(t, "", "label", "-n", ns, "ingress", "unlabelled", "app.kubernetes.io/managed-by-")
		waitForField(t, ns, "ingress", "unlabelled", managedByPath, "dynamic-ingress-operator")
		if got := ingressField(t, ns, "unlabelled", "{.metadata.uid}"); got != uid {
			t.Errorf("the Ingress was replaced (uid %s, was %s); want it restored in place", got, uid)
		}
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "di/unlabelled", "--timeout=30s")
	})

	t.Run("a removed ownerReference gives the Ingress up", func(t *testing.T) {
		kubectl(t, "", "patch", "-n", ns, "ingress", "disowned", "--type", "json",
			"-p", `[{"op":"remove","path":"/metadata/ownerReferences"}]`)
		waitForField(t, ns, "di", "disowned", readyPath, "False/TargetConflict")
		before := kubectl(t, "", "get", "-n", ns, "ingress", "disowned", "-o", "yaml")
		rv := ingressField(t, ns, "disowned", "{.metadata.resourceVersion}")

		// A flip makes the DynamicIngress decide again: it selects the
		// active template, and still leaves the Ingress alone.
		kubectl(t, "", "patch", "-n", ns, "dis", "disowned-flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Active", "di/disowned", "--timeout=30s")
		// Watch it for a while: a manager fighting over the Ingress, or
		// retrying into it, would write within milliseconds.
		for range 20 {
			if got := ingressField(t, ns, "disowned", "{.metadata.resourceVersion}"); got != rv {
				t.Fatalf("the disowned Ingress was written (resourceVersion %s, was %s):\n%s", got, rv,
					kubectl(t, "", "get", "-n", ns, "ingress", "disowned", "-o", "yaml"))
			}
			time.Sleep(250 * time.Millisecond)
		}
		if after := kubectl(t, "", "get", "-n", ns, "ingress", "disowned", "-o", "yaml"); after != before {
			t.Errorf("the disowned Ingress changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if got := kubectl(t, "", "get", "-n", ns, "di", "disowned", "-o", "jsonpath="+readyPath); got != "False/TargetConflict" {
			t.Errorf("disowned Ready = %s, want False/TargetConflict", got)
		}
		// One TargetConflict event, and no other warning: not one per
		// reconcile (a repeated event would show as a series with a count).
		out := kubectl(t, "", "get", "events.events.k8s.io", "-n", ns, "--field-selector", "regarding.name=disowned,type=Warning",
			"-o", `jsonpath={range .items[*]}{.reason} {.series.count}{"\n"}{end}`)
		if got := strings.TrimSpace(out); got != "TargetConflict" {
			t.Errorf("warning events of disowned (reason, series count):\n%s\nwant exactly one TargetConflict, not repeated", out)
		}
		t.Logf("disowned: %s", kubectl(t, "", "get", "-n", ns, "di", "disowned", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`))
	})
}
