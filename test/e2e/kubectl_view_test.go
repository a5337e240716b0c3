package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestKubectlDynamicAsViewer runs status, wait and preview as a user whose
// only grant is the built-in view ClusterRole, bound in one namespace: the
// operator's viewer roles are aggregated into view, so status and wait work
// there and read nothing view does not grant; preview's server-side dry
// runs are checked like the writes they rehearse, so it fails naming the
// permission it lacks (docs/kubectl-dynamic.md).
func TestKubectlDynamicAsViewer(t *testing.T) {
	aggregateViewRole(t)
	ns := newNamespace(t, "plugin-viewer")
	viewer := viewerKubectl(t, ns, "viewer")

	for _, check := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "dynamicingressstates.ingress.dynamicingress.io", "-n", ns}, "yes"},
		{[]string{"watch", "dynamicingresses.ingress.dynamicingress.io", "-n", ns}, "yes"},
		{[]string{"watch", "ingresses.networking.k8s.io", "-n", ns}, "yes"},
		{[]string{"patch", "ingresses.networking.k8s.io", "-n", ns}, "no"},
		{[]string{"list", "dynamicingresses.ingress.dynamicingress.io", "-n", "default"}, "no"},
		// Cluster-scoped: asked without a namespace (-A), as the API
		// server authorizes a request for them.
		{[]string{"get", "customresourcedefinitions.apiextensions.k8s.io", "-A"}, "no"},
		{[]string{"list", "clusterdynamicingressstates.ingress.dynamicingress.io", "-A"}, "no"},
	} {
		args := append([]string{"auth", "can-i"}, check.args...)
		if out, _, _ := viewer.Run("", args...); strings.TrimSpace(out) != check.want {
			t.Errorf("kubectl %s as the viewer: %q, want %q", strings.Join(args, " "), strings.TrimSpace(out), check.want)
		}
	}

	// alpha is active while the state answers 200, beta and gamma while it
	// answers 503.
	apply(t, builders.FixedState(ns, "flag", "200", "").YAML(),
		webIngress(ns, "alpha", "flag").ExpectCode("200").YAML(),
		webIngress(ns, "beta", "flag").ExpectCode("503").YAML(),
		webIngress(ns, "gamma", "flag").ExpectCode("503").YAML())
	waitSwitchesReady(t, ns, "di")

	// A request the viewer may not make would show on stderr (as an error,
	// or a warning) or in the exit status.
	out, stderr, code := runAs(t, viewer, "wait", "flag", "-n", ns, "--timeout", "30s")
	if want := `State "flag": all 3 switches in shape (1 active, 2 passive) after `; code != 0 || stderr != "" || !strings.HasPrefix(out, want) {
		t.Errorf("wait as the viewer: exit %d, stdout %q, stderr %q; want exit 0, nothing on stderr, stdout beginning %q", code, out, stderr, want)
	}

	out, stderr, code = runAs(t, viewer, "status", "flag", "-n", ns)
	if code != 0 || stderr != "" {
		t.Fatalf("status as the viewer: exit %d, stderr %q; want exit 0 and nothing on stderr\n%s", code, stderr, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if want := "State " + ns + "/flag: HTTP 200, Fixed"; lines[0] != want {
		t.Errorf("status as the viewer, first line = %q, want %q", lines[0], want)
	}
	for _, row := range []string{"alpha active", "beta passive", "gamma passive"} {
		name, mode, _ := strings.Cut(row, " ")
		if !regexp.MustCompile(`(?m)^DynamicIngress\s+` + name + `\s+` + ns + `/` + name + `\s+` + mode + `\s+yes\s+none\s+-\s+-\s*$`).MatchString(out) {
			t.Errorf("status as the viewer:\n%s\nwant a row: DynamicIngress %s %s/%s %s yes none - -", out, name, ns, name, mode)
		}
	}
	if last, want := lines[len(lines)-1], "3 switches: 1 active, 2 passive, 0 not yet in shape"; last != want {
		t.Errorf("status as the viewer, summary line = %q, want %q", last, want)
	}

	// view does not patch Ingresses: the dry runs are refused, and preview
	// says what it needs on one line.
	before := resourceVersions(t, ns)
	needs := regexp.MustCompile(`^error: preview needs patch on ingresses\.networking\.k8s\.io \(.*\): dry run of applying Ingress ` + ns +
		`/(alpha|beta|gamma): .*User "system:serviceaccount:` + ns + `:viewer" cannot patch resource "ingresses" in API group "networking\.k8s\.io" in the namespace "` + ns + `"\n$`)
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"preview", "flag", "-n", ns, "--status", "503"}, 1},
		{[]string{"preview", "flag", "-n", ns, "--status", "503", "--exit-code"}, 2},
	} {
		out, stderr, code := runAs(t, viewer, tt.args...)
		if code != tt.code || !needs.MatchString(stderr) {
			t.Errorf("kubectl dynamic %s as the viewer: exit %d, stderr %q; want exit %d and one line matching %s\nstdout:\n%s",
				strings.Join(tt.args, " "), code, stderr, tt.code, needs, out)
		}
		t.Logf("kubectl dynamic %s as the viewer: exit %d: %s", strings.Join(tt.args, " "), code, strings.TrimSpace(stderr))
	}
	if after := resourceVersions(t, ns); after != before {
		t.Errorf("a refused preview changed objects:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A wait that has to wait: alpha's status says passive while its
	// Ingress is active (as a stale writer would leave it; the manager
	// does not reconcile on its own status), until the flip below has the
	// manager write it again.
	var conditions []metav1.Condition
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "-n", ns, "di", "alpha", "-o", "jsonpath={.status.conditions}")), &conditions); err != nil {
		t.Fatal(err)
	}
	for i, c := range conditions {
		if c.Type == v1beta1.ConditionActive {
			kubectl(t, "", "patch", "-n", ns, "di", "alpha", "--subresource=status", "--type=json", "-p",
				fmt.Sprintf(`[{"op":"replace","path":"/status/conditions/%d/status","value":"False"}]`, i))
		}
	}
	start := time.Now()
	done, stdout, stderrBuf := startAs(t, viewer, "wait", "flag", "-n", ns, "--timeout", "60s")
	select {
	case err := <-done:
		t.Fatalf("wait as the viewer returned while alpha's status was stale: %v\n%s%s", err, stdout, stderrBuf)
	case <-time.After(2 * time.Second):
	}
	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"503"}}}`)
	select {
	case err := <-done:
		if want := `State "flag": all 3 switches in shape (2 active, 1 passive) after `; err != nil || stderrBuf.String() != "" || !strings.HasPrefix(stdout.String(), want) {
			t.Errorf("wait as the viewer across the flip: %v, stdout %q, stderr %q; want exit 0, nothing on stderr, stdout beginning %q", err, stdout, stderrBuf, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("wait as the viewer did not return within 30s of the flip\n%s%s", stdout, stderrBuf)
	}
	t.Logf("kubectl dynamic wait as the viewer, started %s before the flip: %s", 2*time.Second, strings.TrimSpace(stdout.String()))
	for name, want := range map[string]string{"alpha": "passive", "beta": "active", "gamma": "active"} {
		if got := shapeOf(t, ns, "ingress", name); got != want {
			t.Errorf("after the viewer's wait returned: Ingress %s is %s, want %s (took %s)", name, got, want, time.Since(start))
		}
	}
}

// aggregateViewRole applies the operator's viewer ClusterRoles
// (config/rbac/*_viewer_role.yaml) and makes sure the built-in view
// ClusterRole holds their rules (aggregateRole).
func aggregateViewRole(t *testing.T) {
	t.Helper()
	aggregateRole(t, "view", "*_viewer_role.yaml")
}

// aggregateRole applies the operator's ClusterRoles of config/rbac that
// pattern matches and makes sure the built-in ClusterRole role holds
// their rules.
//
// In a real cluster kube-controller-manager's clusterrole-aggregation
// controller fills a built-in role's rules with those of every ClusterRole
// its aggregationRule selects (the label aggregate-to-view, -edit, ...).
// This suite's kube-controller-manager runs the garbage collector and the
// namespace controller only, so the bootstrap role kube-apiserver creates
// keeps its aggregationRule and no rules. When the role has no rules, the
// test writes them as that controller would: the union of the rules of
// the ClusterRoles the aggregationRule selects (the operator's roles among
// them), each rule once. When it has rules, the controller runs: the test
// waits for the operator's rules to arrive.
func aggregateRole(t *testing.T, role, pattern string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "config", "rbac", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("config/rbac/%s: %v, %d files", pattern, err, len(files))
	}
	args := []string{"apply"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	kubectl(t, "", args...)

	builtin := clusterRole(t, role)
	if builtin.AggregationRule == nil {
		t.Fatalf("the %s ClusterRole has no aggregationRule", role)
	}
	if len(builtin.Rules) == 0 || !grantsDynamicIngresses(builtin) {
		t.Logf("%s does not grant dynamicingresses: no clusterrole-aggregation controller runs; aggregating as it would", role)
		var rules []rbacv1.PolicyRule
		for _, selector := range builtin.AggregationRule.ClusterRoleSelectors {
			sel, err := metav1.LabelSelectorAsSelector(&selector)
			if err != nil {
				t.Fatal(err)
			}
			var roles rbacv1.ClusterRoleList
			if err := json.Unmarshal([]byte(kubectl(t, "", "get", "clusterroles", "-l", sel.String(), "-o", "json")), &roles); err != nil {
				t.Fatal(err)
			}
			sort.Slice(roles.Items, func(i, j int) bool { return roles.Items[i].Name < roles.Items[j].Name })
			for _, r := range roles.Items {
				for _, rule := range r.Rules {
					if !containsRule(rules, rule) {
						rules = append(rules, rule)
					}
				}
			}
		}
		patch, err := json.Marshal(map[string]any{"rules": rules})
		if err != nil {
			t.Fatal(err)
		}
		kubectl(t, "", "patch", "clusterrole", role, "--type=merge", "-p", string(patch))
	}
	deadline := time.Now().Add(30 * time.Second)
	for !grantsDynamicIngresses(clusterRole(t, role)) {
		if time.Now().After(deadline) {
			t.Fatalf("the %s ClusterRole does not grant dynamicingresses 30s after the operator's roles were applied", role)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func clusterRole(t *testing.T, name string) rbacv1.ClusterRole {
	t.Helper()
	var role rbacv1.ClusterRole
	if err := json.Unmarshal([]byte(kubectl(t, "", "get", "clusterrole", name, "-o", "json")), &role); err != nil {
		t.Fatal(err)
	}
	return role
}

func containsRule(rules []rbacv1.PolicyRule, rule rbacv1.PolicyRule) bool {
	for _, r := range rules {
		if equality.Semantic.DeepEqual(r, rule) {
			return true
		}
	}
	return false
}

func grantsDynamicIngresses(role rbacv1.ClusterRole) bool {
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			if res == "dynamicingresses" {
				return true
			}
		}
	}
	return false
}

// viewerKubectl creates the ServiceAccount name in ns, binds it to the view
// ClusterRole in ns only (a RoleBinding), and returns kubectl, with this
// run's plugin, authenticated as it (boundKubectl).
func viewerKubectl(t *testing.T, ns, name string) controlplane.Kubectl {
	t.Helper()
	return boundKubectl(t, ns, name, "view", "list", "dynamicingresses.ingress.dynamicingress.io")
}

// runAs runs `kubectl dynamic args...` with k and returns what it printed
// and its exit status.
func runAs(t *testing.T, k controlplane.Kubectl, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, err := k.Run("", append([]string{"dynamic"}, args...)...)
	return stdout, stderr, exitCode(t, err)
}

// startAs starts `kubectl dynamic args...` with k in the background: done
// receives its end, and stdout and stderr what it printed, once it is done.
// A command still running when the test ends is killed.
func startAs(t *testing.T, k controlplane.Kubectl, args ...string) (done <-chan error, stdout, stderr *bytes.Buffer) {
	t.Helper()
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd := k.Command("", append([]string{"dynamic"}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	end := make(chan error, 1)
	go func() { end <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return end, stdout, stderr
}
