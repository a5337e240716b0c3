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

// clusterScoped are the resources of the manager's rules that no Role can
// grant: in namespaced mode (watchNamespaces) they stay in a ClusterRole.
var clusterScoped = map[string]bool{"apiextensions.k8s.io/customresourcedefinitions": true}

// splitRules parses the rules of a ClusterRole into those on cluster-scoped
// resources and the others, as YAML lists.
func splitRules(t *testing.T, path, rules string) (cluster, namespaced string) {
	t.Helper()
	var parsed []struct {
		APIGroups []string `json:"apiGroups"`
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal([]byte(rules), &parsed); err != nil {
		t.Fatalf("%s: rules: %v", path, err)
	}
	var all []any
	if err := yaml.Unmarshal([]byte(rules), &all); err != nil {
		t.Fatalf("%s: rules: %v", path, err)
	}
	var c, n []any
	for i, r := range parsed {
		scoped := 0
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if clusterScoped[g+"/"+res] {
					scoped++
				}
			}
		}
		switch scoped {
		case 0:
			n = append(n, all[i])
		case len(r.APIGroups) * len(r.Resources):
			c = append(c, all[i])
		default:
			t.Fatalf("%s: rule %d mixes cluster-scoped and namespaced resources: split its +kubebuilder:rbac marker", path, i)
		}
	}
	marshal := func(rules []any) string {
		if len(rules) == 0 {
			return " []\n"
		}
		raw, err := yaml.Marshal(rules)
		if err != nil {
			t.Fatal(err)
		}
		return "\n" + escapeTemplate(string(raw))
	}
	return marshal(c), marshal(n)
}

// managerRoleTemplate makes the manager's ClusterRole from the one
// controller-gen writes, its rules as they are; in namespaced mode
// (watchNamespaces), a Role with the rules on namespaced resources in each
// of those namespaces, and the ClusterRole with the others.
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
	var b strings.Builder
	b.WriteString("{{- if .Values.rbac.create }}\n")
	fmt.Fprintf(&b, generatedHeader, relPath(path))
	b.WriteString("# What the manager may do, from its +kubebuilder:rbac markers: everywhere,\n")
	b.WriteString("# or with watchNamespaces in a Role in each of them, only the rules on\n")
	b.WriteString("# cluster-scoped resources staying in the ClusterRole.\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\nmetadata:\n", bodies["apiVersion"], bodies["kind"])
	fmt.Fprintf(&b, "  name: {{ include \"dynamic-ingress-operator.fullname\" . }}-%s\n", meta.Name)
	b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" . | nindent 4 }}\n")
	cluster, namespaced := splitRules(t, path, bodies["rules"])
	b.WriteString("{{- if not .Values.watchNamespaces }}\n")
	b.WriteString("rules:\n")
	b.WriteString(escapeTemplate(bodies["rules"]))
	b.WriteString("{{- else }}\n")
	b.WriteString("rules:" + cluster)
	b.WriteString("{{- range .Values.watchNamespaces }}\n---\n")
	fmt.Fprintf(&b, "apiVersion: %s\nkind: Role\nmetadata:\n", bodies["apiVersion"])
	fmt.Fprintf(&b, "  name: {{ include \"dynamic-ingress-operator.fullname\" $ }}-%s\n", meta.Name)
	b.WriteString("  namespace: {{ . }}\n")
	b.WriteString("  labels:\n    {{- include \"dynamic-ingress-operator.labels\" $ | nindent 4 }}\n")
	b.WriteString("rules:" + namespaced)
	b.WriteString("{{- end }}\n{{- end }}\n")
	b.WriteString("{{- end }}\n")
	return b.String()
}

// userRoleFile names the files of config/rbac that hold the roles for the
// people who use the operator (kubebuilder's <kind>_editor_role.yaml,
// _viewer_role.yaml and _admin_role.yaml).
var userRoleFile = regexp.MustCompile(`^[a-z0-9]+_(editor|viewer|admin)_role\.yaml$`)

// aggregationLabel is the prefix of the labels that aggregate a ClusterRole
// into the built-in ones.
const aggregationLabel = "rbac.authorization.k8s.io/aggregate-to-"

// userRolesTemplate makes the user ClusterRoles of config/rbac, with their
// comments, aggregation labels and rules.
func userRolesTemplate(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("{{- if .Values.rbac.userRoles }}\n")
	fmt.Fprintf(&b, generatedHeader, relPath(dir)+"/*_{editor,viewer,admin}_role.yaml")
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
