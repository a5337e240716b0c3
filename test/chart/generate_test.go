package chart_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

var update = flag.Bool("update", false, "rewrite the chart's templates generated from config/")

// generatedHeader starts every generated template.
const generatedHeader = "# Generated from %s by `go test ./test/chart/ -run TestGeneratedTemplatesAreUpToDate -update`: do not edit.\n"

// TestGeneratedTemplatesAreUpToDate checks that the chart's templates made
// from config/ (the CRDs, byte for byte below `spec:`; the manager
// ClusterRole; the user ClusterRoles; the webhook configurations) are what
// config/ makes now, and rewrites them with -update.
func TestGeneratedTemplatesAreUpToDate(t *testing.T) {
	want := generatedTemplates(t)
	templates := filepath.Join(chartDir(), "templates")

	// Every file that says it is generated is one the generator writes.
	err := filepath.WalkDir(templates, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(templates, path)
		if bytes.Contains(raw, []byte("go test ./test/chart/ -run TestGeneratedTemplatesAreUpToDate -update")) {
			if _, ok := want[rel]; !ok {
				if *update {
					t.Logf("removing %s: config/ no longer makes it", rel)
					return os.Remove(path)
				}
				t.Errorf("templates/%s is generated, but config/ no longer makes it: run the -update command in test/chart's package doc", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(templates, name)
		got, _ := os.ReadFile(path)
		if string(got) == want[name] {
			continue
		}
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote templates/%s", name)
			continue
		}
		t.Errorf("templates/%s is not what config/ makes now: run\n\tgo test ./test/chart/ -run TestGeneratedTemplatesAreUpToDate -update\n(-want +got):\n%s", name, cmp.Diff(want[name], string(got)))
	}
}

// generatedTemplates returns the generated templates by path below
// templates/.
func generatedTemplates(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	config := filepath.Join(controlplane.RepoRoot(), "config")
	for _, file := range crdFiles(t) {
		name, text := crdTemplate(t, filepath.Join(config, "crd", file))
		out[filepath.Join("crd", name)] = text
	}
	out[filepath.Join("rbac", "manager-role.yaml")] = managerRoleTemplate(t, filepath.Join(config, "rbac", "role.yaml"))
	out[filepath.Join("rbac", "user-roles.yaml")] = userRolesTemplate(t, filepath.Join(config, "rbac"))
	out[filepath.Join("webhook", "configurations.yaml")] = webhookTemplate(t, filepath.Join(config, "webhook", "manifests.yaml"))
	return out
}

// kustomizationResources returns the resources a kustomization.yaml lists.
func kustomizationResources(t *testing.T, dir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatalf("reading %s/kustomization.yaml: %v", dir, err)
	}
	return k.Resources
}

// crdFiles returns the CRD files config/crd lists, relative to config/crd.
func crdFiles(t *testing.T) []string {
	t.Helper()
	return kustomizationResources(t, filepath.Join(controlplane.RepoRoot(), "config", "crd"))
}

// escapeTemplate keeps text that Helm must pass through as it is.
func escapeTemplate(s string) string {
	return strings.ReplaceAll(s, "{{", `{{ "{{" }}`)
}

// topLevel splits a one-document YAML file into its top-level keys and the
// text below each (the lines after the key's line, as they are).
func topLevel(t *testing.T, path string) (keys []string, bodies map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bodies = map[string]string{}
	key := ""
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		switch {
		case line == "---\n":
			if len(keys) > 0 {
				t.Fatalf("%s holds more than one document", path)
			}
		case line != "" && line[0] != ' ' && line[0] != '-' && line[0] != '#' && line[0] != '\n':
			k, _, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok {
				t.Fatalf("%s: unexpected top-level line %q", path, line)
			}
			key = k
			keys = append(keys, k)
			if rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), k+":")); rest != "" {
				bodies[k] = rest
			}
		case key != "":
			bodies[key] += line
		}
	}
	return keys, bodies
}

// crdTemplate makes the template of one CRD file: its metadata with the
// chart's labels and crds.keep's annotation, and its spec as it is.
func crdTemplate(t *testing.T, path string) (name, text string) {
	t.Helper()
	keys, bodies := topLevel(t, path)
	if !slices.Equal(keys, []string{"apiVersion", "kind", "metadata", "spec"}) {
		t.Fatalf("%s: top-level keys %v, want apiVersion, kind, metadata, spec", path, keys)
	}
	var meta struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict([]byte(bodies["metadata"]), &meta); err != nil {
		t.Fatalf("%s: metadata: %v", path, err)
	}
	var b strings.Builder
	b.WriteString("{{- if .Values.crds.install }}\n")
	fmt.Fprintf(&b, generatedHeader, relPath(path))
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n", bodies["apiVersion"], bodies["kind"], meta.Name)
	b.WriteString("  annotations:\n")
	for _, k := range sortedKeys(meta.Annotations) {
		fmt.Fprintf(&b, "    %s: %s\n", k, quote(meta.Annotations[k]))
	}
	b.WriteString("    {{- if .Values.crds.keep }}\n    helm.sh/resource-policy: keep\n    {{- end }}\n")
	b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" . | nindent 4 }}\n")
	b.WriteString("spec:\n")
	b.WriteString(escapeTemplate(bodies["spec"]))
	b.WriteString("{{- end }}\n")
	return filepath.Base(path), b.String()
}

// ruleScope says where the chart grants the manager's rules on a resource
// in namespaced mode (watchNamespaces). Cluster-wide, the ClusterRole holds
// every rule as controller-gen writes it.
type ruleScope int

const (
	// inWatchedNamespaces: a Role in each watched namespace.
	inWatchedNamespaces ruleScope = iota
	// clusterWide: no Role can grant it, so the ClusterRole keeps it.
	clusterWide
	// clusterWideForClusterStates: cluster-scoped and needed only to follow
	// ClusterDynamicIngressStates, so the ClusterRole keeps it only with
	// clusterStates.followInNamespacedMode (else the manager runs with
	// --cluster-states=false and never asks for it).
	clusterWideForClusterStates
)

// clusterScoped are the cluster-scoped resources of the manager's rules,
// as apiGroup/resource; every other resource is namespaced. A cluster-scoped
// kind of our own group missing here fails the generator (see
// checkOwnClusterScopedKinds).
var clusterScoped = map[string]ruleScope{
	"apiextensions.k8s.io/customresourcedefinitions": clusterWide,
	"authorization.k8s.io/subjectaccessreviews":      clusterWide,
	"/namespaces": clusterWideForClusterStates,
	"ingress.dynamicingress.io/clusterdynamicingressstates":        clusterWideForClusterStates,
	"ingress.dynamicingress.io/clusterdynamicingressstates/status": clusterWideForClusterStates,
}

// clusterStateRole is a Role that namespaced mode adds, with
// clusterStates.followInNamespacedMode, for what following
// ClusterDynamicIngressStates needs in one namespace outside the watched
// ones. Its rules are those of the manager's namespaced rules on resources.
type clusterStateRole struct {
	// name follows the release prefix; the binding in
	// templates/rbac/manager-role-binding.yaml is named with -rolebinding
	// in its place.
	name string
	// namespace is a template expression of its namespace, and
	// namespaceText that namespace in the Role's metadata.
	namespace, namespaceText string
	// resources are apiGroup/resource.
	resources []string
	comment   string
}

var clusterStateRoles = []clusterStateRole{
	{
		name:          "cluster-state-secrets-role",
		namespace:     "$resourceNamespace",
		namespaceText: "{{ $resourceNamespace }}",
		resources:     []string{"/secrets"},
		comment:       "# The Secrets that ClusterDynamicIngressStates' probe headers read\n# (--cluster-resource-namespace).\n",
	},
	{
		name:          "cluster-state-events-role",
		namespace:     `"default"`,
		namespaceText: "default",
		resources:     []string{"events.k8s.io/events"},
		comment:       "# The Events about ClusterDynamicIngressStates: a cluster-scoped object's\n# Events are recorded in the default namespace.\n",
	},
}

// rbacRule is one rule of a role, its fields as controller-gen writes them.
type rbacRule map[string]any

// strings returns a list field of the rule.
func (r rbacRule) strings(t *testing.T, field string) []string {
	t.Helper()
	raw, _ := r[field].([]any)
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("rule %v: %s holds %v, want strings", r, field, v)
		}
		out = append(out, s)
	}
	return out
}

// selectRules returns the rules, or the parts of them, on the resources
// that keep(apiGroup/resource) keeps. A rule that keep takes or leaves
// whole stays as it is; one that mixes is split, one rule per API group
// with the resources kept (its verbs, resourceNames and the rest the same).
func selectRules(t *testing.T, rules []rbacRule, keep func(groupResource string) bool) []rbacRule {
	t.Helper()
	var out []rbacRule
	for _, r := range rules {
		groups, resources := r.strings(t, "apiGroups"), r.strings(t, "resources")
		kept := 0
		for _, g := range groups {
			for _, res := range resources {
				if keep(g + "/" + res) {
					kept++
				}
			}
		}
		switch kept {
		case 0:
			continue
		case len(groups) * len(resources):
			out = append(out, r)
			continue
		}
		for _, g := range groups {
			var part []any
			for _, res := range resources {
				if keep(g + "/" + res) {
					part = append(part, res)
				}
			}
			if len(part) == 0 {
				continue
			}
			split := rbacRule{}
			for k, v := range r {
				split[k] = v
			}
			split["apiGroups"], split["resources"] = []any{g}, part
			out = append(out, split)
		}
	}
	return out
}

// checkOwnClusterScopedKinds fails when the rules name a cluster-scoped kind
// of a CRD in config/crd that clusterScoped does not know: namespaced mode
// would put its rules in Roles, where they grant nothing.
func checkOwnClusterScopedKinds(t *testing.T, path string, rules []rbacRule) {
	t.Helper()
	cluster := map[string]bool{}
	for _, file := range crdFiles(t) {
		raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "crd", file))
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Group string `json:"group"`
				Scope string `json:"scope"`
				Names struct {
					Plural string `json:"plural"`
				} `json:"names"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if crd.Spec.Scope == "Cluster" {
			cluster[crd.Spec.Group+"/"+crd.Spec.Names.Plural] = true
		}
	}
	for _, r := range rules {
		for _, g := range r.strings(t, "apiGroups") {
			for _, res := range r.strings(t, "resources") {
				kind, _, _ := strings.Cut(res, "/")
				if _, known := clusterScoped[g+"/"+res]; cluster[g+"/"+kind] && !known {
					t.Fatalf("%s: %s/%s is cluster-scoped (its CRD says so) but not in test/chart's clusterScoped: add it there", path, g, res)
				}
			}
		}
	}
}

// rulesYAML writes rules as the YAML list after "rules:".
func rulesYAML(t *testing.T, rules []rbacRule) string {
	t.Helper()
	if len(rules) == 0 {
		return " []\n"
	}
	raw, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	return "\n" + escapeTemplate(string(raw))
}

// managerRoleTemplate makes the manager's ClusterRole from the one
// controller-gen writes, its rules as they are. In namespaced mode
// (watchNamespaces): a Role with the rules on namespaced resources in each
// of those namespaces, and the ClusterRole with the rules on cluster-scoped
// ones; those that follow cluster states, and the clusterStateRoles, only
// with clusterStates.followInNamespacedMode.
func managerRoleTemplate(t *testing.T, path string) string {
	t.Helper()
	keys, bodies := topLevel(t, path)
	if !slices.Equal(keys, []string{"apiVersion", "kind", "metadata", "rules"}) {
		t.Fatalf("%s: top-level keys %v, want apiVersion, kind, metadata, rules", path, keys)
	}
	var meta struct {
		Name string `json:"name"`
	}
	if err := yaml.UnmarshalStrict([]byte(bodies["metadata"]), &meta); err != nil {
		t.Fatalf("%s: metadata: %v", path, err)
	}
	var rules []rbacRule
	if err := yaml.Unmarshal([]byte(bodies["rules"]), &rules); err != nil {
		t.Fatalf("%s: rules: %v", path, err)
	}
	for i, r := range rules {
		if len(r.strings(t, "resources")) == 0 {
			// nonResourceURLs: only a ClusterRole grants them, and
			// namespaced mode does not say whether it should.
			t.Fatalf("%s: rule %d names no resources: the generator does not know where namespaced mode grants it", path, i)
		}
	}
	checkOwnClusterScopedKinds(t, path, rules)
	in := func(s ruleScope) func(string) bool {
		return func(groupResource string) bool { return clusterScoped[groupResource] == s }
	}
	namespaced := selectRules(t, rules, in(inWatchedNamespaces))
	cluster := selectRules(t, rules, in(clusterWide))
	forClusterStates := selectRules(t, rules, in(clusterWideForClusterStates))

	var b strings.Builder
	b.WriteString("{{- if .Values.rbac.create }}\n")
	fmt.Fprintf(&b, generatedHeader, relPath(path))
	b.WriteString("# What the manager may do, from its +kubebuilder:rbac markers: everywhere,\n")
	b.WriteString("# or with watchNamespaces in a Role in each of them, only the rules on\n")
	b.WriteString("# cluster-scoped resources staying in the ClusterRole. Following\n")
	b.WriteString("# ClusterDynamicIngressStates in namespaced mode (reading them and the\n")
	b.WriteString("# Namespaces' labels cluster-wide, writing their status, the Secrets of their\n")
	b.WriteString("# probe headers and their Events) is granted only with\n")
	b.WriteString("# clusterStates.followInNamespacedMode.\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n", bodies["apiVersion"], bodies["kind"])
	fmt.Fprintf(&b, "  name: {{ include \"dynamic-ingress-operator.fullname\" . }}-%s\n", meta.Name)
	b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" . | nindent 4 }}\n")
	b.WriteString("{{- if not .Values.watchNamespaces }}\n")
	b.WriteString("rules:\n")
	b.WriteString(escapeTemplate(bodies["rules"]))
	b.WriteString("{{- else }}\n")
	switch {
	case len(forClusterStates) == 0:
		b.WriteString("rules:" + rulesYAML(t, cluster))
	case len(cluster) == 0:
		b.WriteString("{{- if .Values.clusterStates.followInNamespacedMode }}\n")
		b.WriteString("rules:" + rulesYAML(t, forClusterStates))
		b.WriteString("{{- else }}\nrules: []\n{{- end }}\n")
	default:
		b.WriteString("rules:" + rulesYAML(t, cluster))
		b.WriteString("{{- if .Values.clusterStates.followInNamespacedMode }}\n")
		b.WriteString(strings.TrimPrefix(rulesYAML(t, forClusterStates), "\n"))
		b.WriteString("{{- end }}\n")
	}
	b.WriteString("{{- range .Values.watchNamespaces }}\n---\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: Role\nmetadata:\n", bodies["apiVersion"])
	fmt.Fprintf(&b, "  name: {{ include \"dynamic-ingress-operator.fullname\" $ }}-%s\n", meta.Name)
	b.WriteString("  namespace: {{ . }}\n")
	b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" $ | nindent 4 }}\n")
	b.WriteString("rules:" + rulesYAML(t, namespaced))
	b.WriteString("{{- end }}\n")
	b.WriteString("{{- if .Values.clusterStates.followInNamespacedMode }}\n")
	b.WriteString("{{- $resourceNamespace := include \"dynamic-ingress-operator.clusterResourceNamespace\" . }}\n")
	for _, role := range clusterStateRoles {
		r := selectRules(t, namespaced, func(groupResource string) bool { return slices.Contains(role.resources, groupResource) })
		if len(r) == 0 {
			t.Fatalf("%s: no rule on %v, which the Role %s grants: change clusterStateRoles with the markers", path, role.resources, role.name)
		}
		// In a watched namespace the manager's Role has these rules.
		fmt.Fprintf(&b, "{{- if not (has %s .Values.watchNamespaces) }}\n---\n", role.namespace)
		b.WriteString(role.comment)
		fmt.Fprintf(&b, "apiVersion: %s\nkind: Role\nmetadata:\n", bodies["apiVersion"])
		fmt.Fprintf(&b, "  name: {{ include \"dynamic-ingress-operator.fullname\" . }}-%s\n", role.name)
		fmt.Fprintf(&b, "  namespace: %s\n", role.namespaceText)
		b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" . | nindent 4 }}\n")
		b.WriteString("rules:" + rulesYAML(t, r))
		b.WriteString("{{- end }}\n")
	}
	b.WriteString("{{- end }}\n")
	b.WriteString("{{- end }}\n")
	b.WriteString("{{- end }}\n")
	return b.String()
}

// userRoleFile names the files of config/rbac that hold the roles for the
// people who use the operator (kubebuilder's <kind>_editor_role.yaml,
// _viewer_role.yaml and _admin_role.yaml).
var userRoleFile = regexp.MustCompile(`^[a-z0-9]+_(editor|viewer|admin|approver)_role\.yaml$`)

// aggregationLabel is the prefix of the labels that aggregate a ClusterRole
// into the built-in ones.
const aggregationLabel = "rbac.authorization.k8s.io/aggregate-to-"

// userRolesTemplate makes the user ClusterRoles of config/rbac, with their
// comments, aggregation labels and rules.
func userRolesTemplate(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("{{- if .Values.rbac.userRoles }}\n")
	fmt.Fprintf(&b, generatedHeader, relPath(dir)+"/*_{editor,viewer,admin,approver}_role.yaml")
	files := kustomizationResources(t, dir)
	n := 0
	for _, file := range files {
		if !userRoleFile.MatchString(file) {
			continue
		}
		path := filepath.Join(dir, file)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var role struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Rules []any `json:"rules"`
		}
		if err := yaml.UnmarshalStrict(raw, &role); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if role.Kind != "ClusterRole" {
			t.Fatalf("%s holds a %s, want a ClusterRole", path, role.Kind)
		}
		if n > 0 {
			b.WriteString("---\n")
		}
		n++
		for _, line := range strings.SplitAfter(string(raw), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			b.WriteString(line)
		}
		fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n", role.APIVersion, role.Kind)
		fmt.Fprintf(&b, "  name: {{ include \"dynamic-ingress-operator.fullname\" . }}-%s\n", role.Metadata.Name)
		b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" . | nindent 4 }}\n")
		for _, k := range sortedKeys(role.Metadata.Labels) {
			if strings.HasPrefix(k, aggregationLabel) {
				fmt.Fprintf(&b, "    %s: %s\n", k, quote(role.Metadata.Labels[k]))
			}
		}
		rules, err := yaml.Marshal(map[string]any{"rules": role.Rules})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(escapeTemplate(string(rules)))
	}
	if n == 0 {
		t.Fatalf("%s lists no user roles (files like %s)", dir, userRoleFile)
	}
	b.WriteString("{{- end }}\n")
	return b.String()
}

// Placeholders in the webhook configurations, replaced by template code.
const (
	servicePlaceholder   = "CHART_WEBHOOK_SERVICE"
	selectorPlaceholder  = "CHART_WEBHOOK_SELECTOR"
	namespacePlaceholder = "CHART_WEBHOOK_NAMESPACE"
	caBundlePlaceholder  = "CHART_WEBHOOK_CA_BUNDLE"
)

// webhookTemplate makes the webhook configurations from the ones
// controller-gen writes: the same webhooks, calling the chart's Service,
// with their CA from cert-manager or webhook.caBundle.
func webhookTemplate(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{{- if .Values.webhook.enabled }}\n")
	fmt.Fprintf(&b, generatedHeader, relPath(path))
	docs := 0
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		doc = strings.TrimPrefix(doc, "---\n")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var cfg struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Webhooks []map[string]any `json:"webhooks"`
		}
		if err := yaml.UnmarshalStrict([]byte(doc), &cfg); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, w := range cfg.Webhooks {
			cc, _ := w["clientConfig"].(map[string]any)
			svc, _ := cc["service"].(map[string]any)
			if svc == nil || svc["name"] != "webhook-service" || svc["namespace"] != "system" {
				t.Fatalf("%s: webhook %v calls %v, want config/webhook's Service webhook-service in system", path, w["name"], cc)
			}
			svc["name"], svc["namespace"] = servicePlaceholder, namespacePlaceholder
			cc["caBundle"] = caBundlePlaceholder
			if _, ok := w["namespaceSelector"]; ok {
				t.Fatalf("%s: webhook %v has a namespaceSelector; the chart sets its own from watchNamespaces", path, w["name"])
			}
			w["namespaceSelector"] = selectorPlaceholder
		}
		webhooks, err := yaml.Marshal(map[string]any{"webhooks": cfg.Webhooks})
		if err != nil {
			t.Fatal(err)
		}
		text := escapeTemplate(string(webhooks))
		text = strings.ReplaceAll(text, servicePlaceholder, `{{ include "dynamic-ingress-operator.webhookServiceName" . }}`)
		text = strings.ReplaceAll(text, namespacePlaceholder, `{{ .Release.Namespace }}`)
		text = regexp.MustCompile(`(?m)^( +)caBundle: `+caBundlePlaceholder+`\n`).ReplaceAllString(text,
			"${1}{{- if not .Values.webhook.certManager.enabled }}\n${1}caBundle: {{ .Values.webhook.caBundle }}\n${1}{{- end }}\n")
		// In namespaced mode the webhooks answer for the watched
		// namespaces alone: the manager can read and dry-run nothing
		// elsewhere.
		text = regexp.MustCompile(`(?m)^( +)namespaceSelector: `+selectorPlaceholder+`\n`).ReplaceAllStringFunc(text, func(line string) string {
			in := line[:len(line)-len(strings.TrimLeft(line, " "))]
			return in + "{{- with .Values.watchNamespaces }}\n" +
				in + "namespaceSelector:\n" +
				in + "  matchExpressions:\n" +
				in + "  - key: kubernetes.io/metadata.name\n" +
				in + "    operator: In\n" +
				in + "    values:\n" +
				in + fmt.Sprintf("    {{- toYaml . | nindent %d }}\n", len(in)+4) +
				in + "{{- end }}\n"
		})
		if strings.Contains(text, "CHART_WEBHOOK_") {
			t.Fatalf("%s: a placeholder was left in\n%s", path, text)
		}

		if docs > 0 {
			b.WriteString("---\n")
		}
		docs++
		fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n", cfg.APIVersion, cfg.Kind)
		fmt.Fprintf(&b, "  name: {{ include \"dynamic-ingress-operator.fullname\" . }}-%s\n", cfg.Metadata.Name)
		b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" . | nindent 4 }}\n")
		b.WriteString("  {{- if .Values.webhook.certManager.enabled }}\n")
		b.WriteString("  annotations:\n")
		b.WriteString("    cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include \"dynamic-ingress-operator.certificateName\" . }}\n")
		b.WriteString("  {{- end }}\n")
		b.WriteString(text)
	}
	if docs == 0 {
		t.Fatalf("%s holds no webhook configuration", path)
	}
	b.WriteString("{{- end }}\n")
	return b.String()
}

func relPath(path string) string {
	rel, err := filepath.Rel(controlplane.RepoRoot(), path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quote writes a string as a YAML scalar that stays a string.
func quote(s string) string {
	raw, err := yaml.Marshal(s)
	if err != nil {
		panic(err)
	}
	return strings.TrimSuffix(string(raw), "\n")
}
