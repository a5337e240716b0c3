package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// These tests hold kubectl dynamic to what it owes the people who run it
// on a shared cluster (docs/kubectl-dynamic.md): a follower a cluster
// state's grant does not admit never keeps wait from returning, an
// override needs only patch on the switch, and a permission wait lacks
// ends it at once with one line naming it.

// TestKubectlDynamicWaitLeavesOutNotAdmitted: a follower whose namespace
// lost the grant's label is Ready=False StateNotAdmitted by design; wait
// cdis/NAME -A returns once the admitted followers are in shape and says
// whom it left out, and status lists that follower apart.
func TestKubectlDynamicWaitLeavesOutNotAdmitted(t *testing.T) {
	name, label, value := clusterState(t, "200")
	shop := admittedNamespace(t, "fair-shop", label, value)
	blog := admittedNamespace(t, "fair-blog", label, value)
	for _, ns := range []string{shop, blog} {
		apply(t, webIngress(ns, "web", "").ClusterState(name).ExpectCode("503").YAML())
		waitSwitchesReady(t, ns, "di")
	}
	kubectl(t, "", "label", "namespace", blog, label+"-")
	kubectl(t, "", "wait", "-n", blog, "--for=jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}=StateNotAdmitted", "di/web", "--timeout=30s")

	kubectl(t, "", "patch", "cdis", name, "--type=merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	out, stderr, code := runPlugin(t, "wait", "cdis/"+name, "-A", "--timeout", "30s")
	wantOut := regexp.MustCompile(`^State "` + name + `": all 1 switch in shape \(1 active, 0 passive\) after [0-9.]+m?s\n` +
		`Left out 1 follower not admitted by the grant of cdis/` + name + `: DynamicIngress ` + blog + `/web\n$`)
	if code != 0 || stderr != "" || !wantOut.MatchString(out) {
		t.Fatalf("wait cdis/%s -A: exit %d, stderr %q, stdout %q; want exit 0, nothing on stderr, stdout matching %s", name, code, stderr, out, wantOut)
	}
	t.Logf("kubectl dynamic wait cdis/%s -A:\n%s", name, out)
	if got := shapeOf(t, shop, "ingress", "web"); got != "active" {
		t.Errorf("after wait, Ingress %s/web is %s, want active", shop, got)
	}
	if got := shapeOf(t, blog, "ingress", "web"); got != "passive" {
		t.Errorf("Ingress %s/web, not admitted, is %s, want passive (its failurePolicy)", blog, got)
	}

	table := plugin(t, "status", "cdis/"+name, "-A")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^KIND\s+NAME\s+TARGET\s+MODE\s+IN SHAPE\s+OVERRIDE\s+ACCEPTED\s+SERVED\nDynamicIngress\s+` + shop + `/web\s+` + shop + `/web\s+active\s+yes\s+none\s+-\s+-\n` +
			`Not admitted by the grant of cdis/` + name + ` \(each in the mode its failurePolicy selects; wait leaves them out\):\n` +
			`KIND\s+NAME\s+TARGET\s+MODE\s+IN SHAPE\s+OVERRIDE\s+ACCEPTED\s+SERVED\nDynamicIngress\s+` + blog + `/web\s+` + blog + `/web\s+passive\s+yes\s+none\s+-\s+-\n`),
		regexp.MustCompile(`(?m)^1 switch: 1 active, 0 passive, 0 not yet in shape; 1 follower not admitted by the grant$`),
	} {
		if !want.MatchString(table) {
			t.Errorf("status cdis/%s -A:\n%s\nwant it to match %s", name, table, want)
		}
	}

	var report struct {
		Switches, NotAdmitted []struct{ Namespace, Name, Mode string }
		Summary               map[string]int
	}
	if err := json.Unmarshal([]byte(plugin(t, "status", "cdis/"+name, "-A", "-o", "json")), &report); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{"switches": report.Switches, "notAdmitted": report.NotAdmitted, "summary": report.Summary}
	want := map[string]any{
		"switches":    []struct{ Namespace, Name, Mode string }{{shop, "web", "active"}},
		"notAdmitted": []struct{ Namespace, Name, Mode string }{{blog, "web", "passive"}},
		"summary":     map[string]int{"total": 1, "active": 1, "passive": 0, "notInShape": 0, "notAdmitted": 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status cdis/%s -A -o json (-want +got):\n%s", name, diff)
	}
}

// TestKubectlDynamicOverrideWithoutClusterStateRead: a namespace's editor
// of DynamicIngresses, who may not read the cluster state, pins a follower
// of it and gives it back: each override is applied, exits 0 and says what
// it could not tell; the target follows.
func TestKubectlDynamicOverrideWithoutClusterStateRead(t *testing.T) {
	name, label, value := clusterState(t, "200")
	ns := admittedNamespace(t, "fair-override", label, value)
	apply(t, webIngress(ns, "web", "").ClusterState(name).ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di")
	kubectl(t, "", "apply", "-f", filepath.Join(controlplane.RepoRoot(), "config", "rbac", "dynamicingress_editor_role.yaml"))
	editor := boundKubectl(t, ns, "oncall", "dynamicingress-editor", "patch", "dynamicingresses.ingress.dynamicingress.io")
	if out, _, _ := editor.Run("", "auth", "can-i", "get", "clusterdynamicingressstates.ingress.dynamicingress.io", "-A"); strings.TrimSpace(out) != "no" {
		t.Fatalf("the editor may get clusterdynamicingressstates (%q): the test needs a user who may not", strings.TrimSpace(out))
	}

	couldNotTell := "reading it needs get on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped), which you lack"
	for _, tt := range []struct {
		mode, stdout, override, shape string
	}{
		{"active", `DynamicIngress "web": spec.override pins active mode; could not tell what ClusterDynamicIngressState "` + name + `" would select: ` + couldNotTell,
			"Active", "active"},
		{"none", `DynamicIngress "web": spec.override removed; it follows ClusterDynamicIngressState "` + name + `" again; could not tell which mode that selects: ` + couldNotTell,
			"", "passive"},
	} {
		out, stderr, code := runAs(t, editor, "override", "di/web", tt.mode, "-n", ns)
		if code != 0 || stderr != "" || out != tt.stdout+"\n" {
			t.Errorf("override di/web %s as the editor: exit %d, stderr %q, stdout %q; want exit 0, nothing on stderr, stdout %q", tt.mode, code, stderr, out, tt.stdout)
		}
		if got := kubectl(t, "", "get", "-n", ns, "di", "web", "-o", "jsonpath={.spec.override}"); got != tt.override {
			t.Errorf("after override di/web %s: spec.override = %q, want %q", tt.mode, got, tt.override)
		}
		plugin(t, "wait", "cdis/"+name, "-n", ns, "--timeout", "30s")
		if got := shapeOf(t, ns, "ingress", "web"); got != tt.shape {
			t.Errorf("after override di/web %s: Ingress web is %s, want %s", tt.mode, got, tt.shape)
		}
	}
}

// TestKubectlDynamicWaitNamesTheMissingPermission: a user bound to view in
// one namespace waits on a cluster state: across every namespace (-A) it
// may not list the switches, and in its namespace it may not watch the
// cluster state; either way wait ends at once, exit 1, with one line
// naming the permission.
func TestKubectlDynamicWaitNamesTheMissingPermission(t *testing.T) {
	aggregateViewRole(t)
	name, label, value := clusterState(t, "200")
	ns := admittedNamespace(t, "fair-viewer", label, value)
	apply(t, webIngress(ns, "web", "").ClusterState(name).ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di")
	viewer := viewerKubectl(t, ns, "viewer")
	user := fmt.Sprintf(`User "system:serviceaccount:%s:viewer"`, ns)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-A"}, `error: wait needs list on dynamicingresses.ingress.dynamicingress.io in every namespace (-A; -n NAMESPACE asks in one): ` +
			`dynamicingresses.ingress.dynamicingress.io is forbidden: ` + user + ` cannot list resource "dynamicingresses" in API group "ingress.dynamicingress.io" at the cluster scope` + "\n"},
		{[]string{"-n", ns}, `error: wait needs watch on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped): ` +
			`clusterdynamicingressstates.ingress.dynamicingress.io "` + name + `" is forbidden: ` + user + ` cannot watch resource "clusterdynamicingressstates" in API group "ingress.dynamicingress.io" at the cluster scope` + "\n"},
	} {
		start := time.Now()
		out, stderr, code := runAs(t, viewer, append([]string{"wait", "cdis/" + name, "--timeout", "60s"}, tt.args...)...)
		took := time.Since(start)
		if code != 1 || stderr != tt.want {
			t.Errorf("wait cdis/%s %v as the viewer: exit %d, stderr %q; want exit 1 and %q\nstdout: %s", name, tt.args, code, stderr, tt.want, out)
		}
		if took > 20*time.Second {
			t.Errorf("wait cdis/%s %v as the viewer took %s to fail, want at once", name, tt.args, took)
		}
	}
}

// boundKubectl creates the ServiceAccount name in ns, binds it to the
// ClusterRole role in ns only (a RoleBinding), and returns kubectl, with
// this run's plugin, authenticated as it with a token from the
// TokenRequest API, once the API server's authorizer lets it verb
// resource in ns.
func boundKubectl(t *testing.T, ns, name, role, verb, resource string) controlplane.Kubectl {
	t.Helper()
	kubectl(t, "", "create", "serviceaccount", name, "-n", ns)
	kubectl(t, "", "create", "rolebinding", name+"-"+role, "-n", ns, "--clusterrole="+role, "--serviceaccount="+ns+":"+name)
	token := strings.TrimSpace(kubectl(t, "", "create", "token", name, "-n", ns, "--duration=1h"))

	admin, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	server := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	config := clientcmdapi.NewConfig()
	config.Clusters["e2e"] = server
	config.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts[name] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name, Namespace: ns}
	config.CurrentContext = name
	path := filepath.Join(t.TempDir(), "kubeconfig-"+name)
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	k := controlplane.Kubectl{Kubeconfig: path, PluginDir: pluginDir}

	// The API server's authorizer sees the new binding a moment later.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := k.Run("", "auth", "can-i", verb, resource, "-n", ns)
		if strings.TrimSpace(out) == "yes" {
			return k
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s may not %s %s in %s 30s after its RoleBinding to %s: %q", name, verb, resource, ns, role, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
