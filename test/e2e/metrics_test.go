package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads the manager's metrics endpoint as Prometheus would.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scraping the manager: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the metrics: %v", err)
	}
	return families
}

// series finds the metric of family name whose labels include all of
// labels; nil when there is none.
func series(families map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	f := families[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a gauge's or counter's value, -1 when the series is missing.
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	m := series(families, name, labels)
	switch {
	case m == nil:
		return -1
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -1
}

// histogramCount is the number of observations of a histogram series.
func histogramCount(families map[string]*dto.MetricFamily, name string, labels map[string]string) uint64 {
	if m := series(families, name, labels); m != nil && m.Histogram != nil {
		return m.Histogram.GetSampleCount()
	}
	return 0
}

// TestMetricsAfterAFlip scrapes the manager after a flip of three
// DynamicIngresses and checks every metric of the operator: values,
// labels, the switch latency counting each target written, series removed
// with their object, and gauges back after a restart.
func TestMetricsAfterAFlip(t *testing.T) {
	ns := newNamespace(t, "metrics")
	kubectl(t, stateManifest(ns, "flag", "503"), "apply", "-f", "-")
	// A probed state whose endpoint refuses connections.
	kubectl(t, probedStateManifest(ns, "gone", "http://127.0.0.1:1/flag"), "apply", "-f", "-")
	names := []string{"a", "b", "c"}
	for _, name := range names {
		kubectl(t, dynamicIngressManifest(ns, name, name, "flag", "/"), "apply", "-f", "-")
	}
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready", "dynamicingress", "--all", "--timeout=30s")
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Ready=False", "dis/gone", "--timeout=30s")

	kind := map[string]string{"kind": "DynamicIngress"}
	latencyBefore := histogramCount(scrape(t), "dynamicingress_switch_latency_seconds", kind)
	m := scrape(t)
	for _, name := range names {
		labels := map[string]string{"namespace": ns, "name": name, "kind": "DynamicIngress", "state": "flag"}
		if got := value(m, "dynamicingress_active", labels); got != 0 {
			t.Errorf("dynamicingress_active%v = %v before the flip, want 0", labels, got)
		}
		to := map[string]string{"namespace": ns, "name": name, "kind": "DynamicIngress", "to": "active"}
		if got := value(m, "dynamicingress_switches_total", to); got != 0 {
			t.Errorf("dynamicingress_switches_total%v = %v at creation, want 0: the first mode is not a switch", to, got)
		}
	}

	kubectl(t, "", "patch", "-n", ns, "dis", "flag", "--type", "merge", "-p", `{"spec":{"fixedResponse":{"status":"200"}}}`)
	kubectl(t, "", "wait", "-n", ns, "--for=condition=Active", "dynamicingress", "--all", "--timeout=30s")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && histogramCount(scrape(t), "dynamicingress_switch_latency_seconds", kind) < latencyBefore+3 {
		time.Sleep(100 * time.Millisecond)
	}
	m = scrape(t)
	for _, name := range names {
		labels := map[string]string{"namespace": ns, "name": name, "kind": "DynamicIngress", "state": "flag"}
		if got := value(m, "dynamicingress_active", labels); got != 1 {
			t.Errorf("dynamicingress_active%v = %v after the flip, want 1", labels, got)
		}
		to := map[string]string{"namespace": ns, "name": name, "kind": "DynamicIngress", "to": "active"}
		if got := value(m, "dynamicingress_switches_total", to); got != 1 {
			t.Errorf("dynamicingress_switches_total%v = %v, want 1", to, got)
		}
	}
	if got := histogramCount(m, "dynamicingress_switch_latency_seconds", kind) - latencyBefore; got != 3 {
		t.Errorf("dynamicingress_switch_latency_seconds counted %d switches, want 3: one per target written", got)
	}
	if got := value(m, "dynamicingressstate_up", map[string]string{"namespace": ns, "name": "flag"}); got != 1 {
		t.Errorf("dynamicingressstate_up for the fixed state = %v, want 1", got)
	}
	gone := map[string]string{"namespace": ns, "name": "gone"}
	if got := value(m, "dynamicingressstate_up", gone); got != 0 {
		t.Errorf("dynamicingressstate_up for the failing state = %v, want 0", got)
	}
	if got := value(m, "dynamicingressstate_probe_failures_total", map[string]string{"namespace": ns, "name": "gone", "reason": "connect"}); got < 1 {
		t.Errorf("dynamicingressstate_probe_failures_total{reason=connect} = %v, want at least 1", got)
	}
	if got := histogramCount(m, "dynamicingressstate_probe_duration_seconds", gone); got < 1 {
		t.Errorf("dynamicingressstate_probe_duration_seconds counted %d probes, want every probe, failed ones included", got)
	}

	// Series of deleted objects are deleted.
	kubectl(t, "", "delete", "-n", ns, "di", "c", "--wait=true")
	kubectl(t, "", "delete", "-n", ns, "dis", "gone", "--wait=true")
	deadline = time.Now().Add(10 * time.Second)
	for {
		m = scrape(t)
		leftovers := []string{}
		for _, name := range []string{"dynamicingress_active", "dynamicingress_switches_total"} {
			if series(m, name, map[string]string{"namespace": ns, "name": "c"}) != nil {
				leftovers = append(leftovers, name+" of di/c")
			}
		}
		for _, name := range []string{"dynamicingressstate_up", "dynamicingressstate_probe_failures_total", "dynamicingressstate_probe_duration_seconds"} {
			if series(m, name, gone) != nil {
				leftovers = append(leftovers, name+" of dis/gone")
			}
		}
		if len(leftovers) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series of deleted objects are still exported: %s", strings.Join(leftovers, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// After a restart the gauges are there again, before anything changes.
	stopManager()
	if err := startManager(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		m = scrape(t)
		missing := []string{}
		for _, name := range []string{"a", "b"} {
			if value(m, "dynamicingress_active", map[string]string{"namespace": ns, "name": name, "state": "flag"}) != 1 {
				missing = append(missing, fmt.Sprintf("dynamicingress_active of di/%s", name))
			}
		}
		if value(m, "dynamicingressstate_up", map[string]string{"namespace": ns, "name": "flag"}) != 1 {
			missing = append(missing, "dynamicingressstate_up of dis/flag")
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a restart, not set: %s", strings.Join(missing, ", "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
