package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/metrics"
)

// dashboardFile is the Grafana dashboard config/grafana ships.
var dashboardFile = filepath.Join("config", "grafana", "dynamic-ingress-operator.json")

// exportedMetrics returns the series names the manager's /metrics can
// show: the families on controller-runtime's registry (the manager's
// endpoint), with a histogram's _bucket, _sum and _count and a summary's
// _sum and _count.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	// A vector shows on a scrape only once it has a series: give each of
	// the operator's metrics one, and take it away afterwards.
	metrics.SetActive(metrics.KindDynamicIngress, "dashboard-test", "di", "s", true)
	metrics.RecordSwitch(metrics.KindDynamicIngress, "dashboard-test", "di", true, time.Second, true)
	metrics.ObserveProbe("dashboard-test", "s", time.Second, "timeout")
	metrics.SetStateUp("dashboard-test", "s", true)
	defer metrics.ForgetTarget(metrics.KindDynamicIngress, "dashboard-test", "di")
	defer metrics.ForgetState("dashboard-test", "s")

	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[f.GetName()+"_bucket"] = true
			names[f.GetName()+"_sum"] = true
			names[f.GetName()+"_count"] = true
		case dto.MetricType_SUMMARY:
			names[f.GetName()] = true
			names[f.GetName()+"_sum"] = true
			names[f.GetName()+"_count"] = true
		default:
			names[f.GetName()] = true
		}
	}
	return names
}

var (
	// Stripped before looking for names: strings, label matchers, range
	// and subquery selectors, and the label lists of grouping clauses.
	promqlString   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// A token: a Grafana variable, a number or duration, or a name,
	// possibly followed by "(" (then it is a function).
	promqlToken = regexp.MustCompile(`\$\w+|\$\{[^}]*\}|[0-9][0-9a-zA-Z.]*|([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?`)
	// Names that are not metrics: operators and modifiers.
	promqlKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "start": true, "end": true,
	}
	// label_values(metric, label) in a variable's query.
	labelValues = regexp.MustCompile(`^\s*label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{[^}]*\})?\s*,\s*\w+\s*\)\s*$`)
)

// metricNames returns the metric names a PromQL expression selects.
func metricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, " ")
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRange.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	var names []string
	for _, m := range promqlToken.FindAllStringSubmatch(s, -1) {
		name, call := m[1], m[2]
		if name == "" || call != "" || promqlKeywords[strings.ToLower(name)] {
			continue
		}
		names = append(names, name)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`dynamicingressstate_up == 0`, []string{"dynamicingressstate_up"}},
		{`sum by (namespace, state) (dynamicingress_active{kind="DynamicIngress",namespace=~"$namespace"})`, []string{"dynamicingress_active"}},
		{`histogram_quantile(0.99, sum by (le) (rate(dynamicingress_switch_latency_seconds_bucket[$__rate_interval])))`, []string{"dynamicingress_switch_latency_seconds_bucket"}},
		{`count(dynamicingressstate_up{namespace=~"$namespace"} == 0) or vector(0)`, []string{"dynamicingressstate_up"}},
		{`rate(a_total[5m] offset 1h) / on (name) group_left (x) b_total`, []string{"a_total", "b_total"}},
		{`topk(5, x{l="sum(y)"})`, []string{"x"}},
		{`{__name__="x"}`, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, metricNames(tt.expr)); diff != "" {
			t.Errorf("metricNames(%s) (-want +got):\n%s", tt.expr, diff)
		}
	}
}

// queries returns every PromQL expression in a dashboard (panel targets,
// rows included) and the metric of every label_values variable, each with
// where it is.
func queries(t *testing.T, dashboard map[string]any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			title, _ := v["title"].(string)
			if title != "" {
				path += "/" + title
			}
			for k, child := range v {
				if expr, ok := child.(string); ok && k == "expr" {
					if strings.TrimSpace(expr) == "" {
						t.Errorf("%s: empty expr", path)
					}
					out[path+": "+expr] = metricNames(expr)
					continue
				}
				walk(path, child)
			}
		case []any:
			for _, child := range v {
				walk(path, child)
			}
		}
	}
	walk("panels", dashboard["panels"])

	templating, _ := dashboard["templating"].(map[string]any)
	list, _ := templating["list"].([]any)
	for _, v := range list {
		variable, _ := v.(map[string]any)
		if variable["type"] != "query" {
			continue
		}
		query := variable["definition"]
		if q, ok := variable["query"].(map[string]any); ok {
			query = q["query"]
		}
		m := labelValues.FindStringSubmatch(query.(string))
		if m == nil {
			t.Errorf("variable %v: query %q is not label_values(metric, label)", variable["name"], query)
			continue
		}
		out["variable "+variable["name"].(string)+": "+query.(string)] = []string{m[1]}
	}
	return out
}

// TestDashboardNamesOnlyExportedMetrics fails when a panel of the Grafana
// dashboard names a metric the manager does not export (a typo, or a
// metric renamed since), and when one of the operator's metrics has no
// panel.
func TestDashboardNamesOnlyExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard map[string]any
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exported := exportedMetrics(t)
	used := map[string]bool{}
	found := queries(t, dashboard)
	if len(found) == 0 {
		t.Fatalf("%s has no queries", dashboardFile)
	}
	for where, names := range found {
		if len(names) == 0 {
			t.Errorf("%s names no metric", where)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("%s names %s, which the manager does not export", where, n)
			}
		}
	}

	// Every metric of the operator is on the dashboard.
	var unused []string
	for _, base := range []string{metrics.ActiveName, metrics.SwitchesName, metrics.SwitchLatencyName, metrics.ProbeDurationName, metrics.ProbeFailuresName, metrics.StateUpName} {
		if !slices.ContainsFunc([]string{base, base + "_bucket", base + "_sum", base + "_count"}, func(n string) bool { return used[n] }) {
			unused = append(unused, base)
		}
	}
	if len(unused) > 0 {
		t.Errorf("%s has no panel for %v", dashboardFile, unused)
	}
}
