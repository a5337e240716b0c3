package uninstall

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
)

// The CRDs the operator installs, by name.
var crdNames = []string{
	"customresourcedefinition.apiextensions.k8s.io/clusterdynamicingressstates.ingress.dynamicingress.io",
	"customresourcedefinition.apiextensions.k8s.io/dynamichttproutes.ingress.dynamicingress.io",
	"customresourcedefinition.apiextensions.k8s.io/dynamicingresses.ingress.dynamicingress.io",
	"customresourcedefinition.apiextensions.k8s.io/dynamicingressnotifiers.ingress.dynamicingress.io",
	"customresourcedefinition.apiextensions.k8s.io/dynamicingressstates.ingress.dynamicingress.io",
}

// TestDocumentedUninstallKeepsEveryTarget: the manager makes Ingresses
// and HTTPRoutes for DynamicIngresses and DynamicHTTPRoutes in both modes;
// then the commands of docs/install.md's Uninstall, as written, remove the
// operator (step 1: everything of install.yaml but the CRDs) and then the
// CRDs (step 2: release every target, delete the CRDs). Every Ingress and
// HTTPRoute must still be there, the same object with the same spec,
// labels and annotations, once the garbage collector has acted on the
// deletion of the CRDs: a ConfigMap owned by a DynamicIngressState shows
// when it has.
func TestDocumentedUninstallKeepsEveryTarget(t *testing.T) {
	removeOperator, removeCRDs := documentedUninstall(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.WaitForGarbageCollector(ctx); err != nil {
		t.Fatal(err)
	}
	manager := startManager(t)

	var targets []string
	for _, ns := range []string{"shop", "team-a"} {
		kubectl(t, "", "create", "namespace", ns)
		kubectl(t, stateManifest(ns, "up", "200")+"---\n"+stateManifest(ns, "down", "503"), "apply", "-f", "-")
		kubectl(t, strings.Join([]string{
			dynamicIngressManifest(ns, "storefront", "up"),
			dynamicIngressManifest(ns, "checkout", "down"),
			dynamicHTTPRouteManifest(ns, "api", "up"),
			dynamicHTTPRouteManifest(ns, "search", "down"),
		}, "---\n"), "apply", "-f", "-")
		kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "di/storefront", "di/checkout", "dhr/api", "dhr/search", "--timeout=60s")
		targets = append(targets,
			"ingress.networking.k8s.io/"+ns+"/checkout", "ingress.networking.k8s.io/"+ns+"/storefront",
			"httproute.gateway.networking.k8s.io/"+ns+"/api", "httproute.gateway.networking.k8s.io/"+ns+"/search")
	}
	slices.Sort(targets)
	if got := liveTargets(t); !slices.Equal(got, targets) {
		t.Fatalf("targets before the uninstall: %v, want %v", got, targets)
	}
	before := map[string]target{}
	for _, ref := range targets {
		before[ref] = getTarget(t, ref)
		if !strings.Contains(before[ref].Owners, `"controller":true`) {
			t.Fatalf("%s has no controller ownerReference before the uninstall: %s", ref, before[ref].Owners)
		}
	}
	stateUID := kubectl(t, "", "get", "-n", "shop", "dis", "up", "-o", "jsonpath={.metadata.uid}")
	kubectl(t, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  namespace: shop
  name: owned-by-a-state
  ownerReferences:
  - {apiVersion: ingress.dynamicingress.io/v1beta1, kind: DynamicIngressState, name: up, uid: %s}
`, stateUID), "apply", "-f", "-")

	// The cluster as install.yaml leaves it: config/default applied, as
	// `make build-installer` renders it, with cert-manager's CRDs.
	dir := t.TempDir()
	installYAML := filepath.Join(dir, "dist", "install.yaml")
	if err := os.MkdirAll(filepath.Dir(installYAML), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(installYAML, []byte(kubectl(t, "", "kustomize", "config/default")), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "", "apply", "--server-side", "-f", bundle.CertManagerCRDDir(t))
	// kubectl wait fails at once, rather than waiting, on a CRD whose
	// status has no conditions yet (created a moment ago): try again.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, _, err := runKubectl("", "wait", "--for=condition=Established", "crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io", "--timeout=30s")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			kubectl(t, "", "wait", "--for=condition=Established", "crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io", "--timeout=1s")
		}
	}
	kubectl(t, "", "apply", "--server-side", "-f", installYAML)

	// Step 1 deletes the Deployment, whose pods this local manager stands
	// for: it stops first, as they would. The webhook configurations
	// pointing at it stay (they are the test's, not install.yaml's), so
	// step 2 also shows their matchConditions let the garbage collector
	// through with no webhook server answering.
	manager.Stop(10 * time.Second)
	runShell(t, dir, removeOperator)
	if got := strings.Fields(kubectl(t, "", "get", "-f", installYAML, "--ignore-not-found", "-o", "name")); !slices.Equal(sortedCopy(got), crdNames) {
		t.Errorf("objects of install.yaml left after step 1: %v, want its CRDs alone, %v", got, crdNames)
	}
	for _, ref := range targets {
		if diff := cmp.Diff(before[ref], getTarget(t, ref)); diff != "" {
			t.Errorf("%s changed in step 1 (-before +after):\n%s", ref, diff)
		}
	}

	// config/webhook's configurations, the test's, still send creates
	// and updates to the stopped manager.
	kubectl(t, "", "get", "mutatingwebhookconfiguration/mutating-webhook-configuration", "validatingwebhookconfiguration/validating-webhook-configuration")

	runShell(t, dir, removeCRDs)
	if got := kubectl(t, "", "get", "-f", installYAML, "--ignore-not-found", "-o", "name"); got != "" {
		t.Errorf("objects of install.yaml left after step 2: %s", got)
	}
	// The garbage collector has acted on the CRDs' deletion once the
	// ConfigMap a DynamicIngressState owned is gone.
	deadline := time.Now().Add(time.Minute)
	for kubectl(t, "", "get", "-n", "shop", "configmap", "owned-by-a-state", "--ignore-not-found", "-o", "name") != "" {
		if time.Now().After(deadline) {
			t.Fatal("the garbage collector did not delete the ConfigMap of a deleted DynamicIngressState within a minute: is it running? (kube-controller-manager.log)")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// What must not happen has no event to wait for: give the garbage
	// collector a few more seconds, then look.
	time.Sleep(5 * time.Second)
	if got := liveTargets(t); !slices.Equal(got, targets) {
		t.Fatalf("targets after the uninstall: %v, want every one of %v", got, targets)
	}
	for _, ref := range targets {
		want := before[ref]
		want.Owners = "null"
		if diff := cmp.Diff(want, getTarget(t, ref)); diff != "" {
			t.Errorf("%s after the uninstall (-want +got):\n%s", ref, diff)
		}
	}
}

// TestNotesShowTheDocumentedCommands: the chart's NOTES.txt and README
// give the commands that remove the CRDs as docs/install.md does, the ones
// the test above runs.
func TestNotesShowTheDocumentedCommands(t *testing.T) {
	_, removeCRDs := documentedUninstall(t)
	chart := filepath.Join(controlplane.RepoRoot(), "charts", "dynamic-ingress-operator")
	for _, file := range []string{filepath.Join("templates", "NOTES.txt"), "README.md"} {
		raw, err := os.ReadFile(filepath.Join(chart, file))
		if err != nil {
			t.Fatal(err)
		}
		lines := map[string]bool{}
		for _, line := range strings.Split(string(raw), "\n") {
			lines[strings.TrimSpace(line)] = true
		}
		for _, line := range strings.Split(strings.TrimSpace(removeCRDs), "\n") {
			if !lines[strings.TrimSpace(line)] {
				t.Errorf("the chart's %s does not have the line of docs/install.md's Uninstall\n\t%s", file, line)
			}
		}
	}
}

// TestMakeUndeployKeepsTheCRDsAsDocumented: make undeploy filters
// install.yaml with the awk program docs/install.md gives, the one the
// test above runs.
func TestMakeUndeployKeepsTheCRDsAsDocumented(t *testing.T) {
	removeOperator, _ := documentedUninstall(t)
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^WITHOUT_CRDS = awk '(.*)'$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the Makefile has no line WITHOUT_CRDS = awk '...'")
	}
	inMakefile := strings.Fields(strings.ReplaceAll(string(m[1]), "$$", "$"))
	d := regexp.MustCompile(`(?s)awk '(.*)' dist/install.yaml`).FindStringSubmatch(removeOperator)
	if d == nil {
		t.Fatalf("docs/install.md's command of step 1 is not awk '...' dist/install.yaml:\n%s", removeOperator)
	}
	if diff := cmp.Diff(strings.Fields(d[1]), inMakefile); diff != "" {
		t.Errorf("the Makefile's WITHOUT_CRDS is not the awk program of docs/install.md (-docs +Makefile):\n%s", diff)
	}
}

// target is what the uninstall must leave as it was of an Ingress or
// HTTPRoute, each part as JSON.
type target struct {
	UID, Spec, Labels, Annotations, Owners string
}

// getTarget reads a target named kind.group/namespace/name.
func getTarget(t *testing.T, ref string) target {
	t.Helper()
	kind, ns, name := splitRef(t, ref)
	var obj struct {
		Metadata struct {
			UID             string          `json:"uid"`
			Labels          json.RawMessage `json:"labels"`
			Annotations     json.RawMessage `json:"annotations"`
			OwnerReferences json.RawMessage `json:"ownerReferences"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "-n", ns, kind, name, "-o", "json")), &obj); err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	compact := func(raw json.RawMessage) string {
		if len(raw) == 0 {
			return "null"
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	return target{
		UID:         obj.Metadata.UID,
		Spec:        compact(obj.Spec),
		Labels:      compact(obj.Metadata.Labels),
		Annotations: compact(obj.Metadata.Annotations),
		Owners:      compact(obj.Metadata.OwnerReferences),
	}
}

// liveTargets lists every Ingress and HTTPRoute in the cluster as
// kind.group/namespace/name, sorted.
func liveTargets(t *testing.T) []string {
	t.Helper()
	out := kubectl(t, "", "get", "ingresses.networking.k8s.io,httproutes.gateway.networking.k8s.io", "--all-namespaces",
		"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}`)
	var refs []string
	for _, line := range strings.Fields(out) {
		kind, rest, _ := strings.Cut(line, "/")
		switch kind {
		case "Ingress":
			refs = append(refs, "ingress.networking.k8s.io/"+rest)
		case "HTTPRoute":
			refs = append(refs, "httproute.gateway.networking.k8s.io/"+rest)
		default:
			t.Fatalf("unexpected kind in %q", line)
		}
	}
	slices.Sort(refs)
	return refs
}

func splitRef(t *testing.T, ref string) (kind, ns, name string) {
	t.Helper()
	parts := strings.Split(ref, "/")
	if len(parts) != 3 {
		t.Fatalf("bad reference %q", ref)
	}
	return parts[0], parts[1], parts[2]
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// shellBlock matches a ```sh block of a Markdown page.
var shellBlock = regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n")

// documentedUninstall returns the commands of docs/install.md's Uninstall
// section: the one of step 1 that removes what install.yaml installed but
// its CRDs, and those of step 2 that release every target and delete the
// CRDs.
func documentedUninstall(t *testing.T) (removeOperator, removeCRDs string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Uninstall\n")
	if !ok {
		t.Fatal("docs/install.md has no Uninstall section")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	for _, m := range shellBlock.FindAllStringSubmatch(section, -1) {
		switch block := m[1]; {
		case strings.Contains(block, "install.yaml") && strings.Contains(block, "kubectl delete"):
			if removeOperator != "" {
				t.Fatal("docs/install.md's Uninstall has two blocks that delete what install.yaml installed")
			}
			removeOperator = block
		case strings.Contains(block, "--cascade=orphan"):
			if removeCRDs != "" {
				t.Fatal("docs/install.md's Uninstall has two blocks with --cascade=orphan")
			}
			removeCRDs = block
		}
	}
	if removeOperator == "" || removeCRDs == "" {
		t.Fatalf("docs/install.md's Uninstall: no block deleting install.yaml's objects (%q) or releasing the targets (%q)", removeOperator, removeCRDs)
	}
	return removeOperator, removeCRDs
}
