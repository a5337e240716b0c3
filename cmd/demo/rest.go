package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// restSeries are the metrics the at-rest step shows: the manager's gauge,
// the collector's target and the live heap.
var restSeries = []string{"dynamicingress_manager_memory_at_rest", "go_gc_gogc_percent", "go_gc_heap_live_bytes"}

// memoryAtRest waits for the manager to be at rest after the story, shows
// its lower GC target, then flips the kill switch and shows the target
// back at once, and flips it back.
func memoryAtRest(k *kubectl, metricsURL string, traffic *dataPlane) error {
	title("14. At rest the manager gives memory back; a flip takes it again at once")
	say("With nothing to do for 30s, the manager collects garbage more often (GOGC 25, --gc-percent-at-rest):")
	say("the heap's headroom is then only memory. Its metrics (%s):", metricsURL)
	if err := waitMetric(metricsURL, "dynamicingress_manager_memory_at_rest", 1, 90*time.Second); err != nil {
		return err
	}
	if err := showMetrics(metricsURL); err != nil {
		return err
	}
	say("The kill switch fires: the first switch's reconcile puts GOGC back before the flip's writes.")
	fired, err := k.flipKillSwitch(traffic, "503", sorryPage)
	if err != nil {
		return err
	}
	if err := waitMetric(metricsURL, "dynamicingress_manager_memory_at_rest", 0, 10*time.Second); err != nil {
		return err
	}
	if err := showMetrics(metricsURL); err != nil {
		return err
	}
	if s := <-fired; s.err != nil {
		return s.err
	}
	back, err := k.flipKillSwitch(traffic, "200", storefrontPage)
	if err != nil {
		return err
	}
	if s := <-back; s.err != nil {
		return s.err
	}
	say("The storefront is back; 30s after the last work the manager is at rest again.")
	return nil
}

// metricValues reads the restSeries' values (each a gauge of one series)
// from the manager's metrics, as Prometheus parses them.
func metricValues(url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	values := map[string]float64{}
	for _, name := range restSeries {
		if f := families[name]; f != nil && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetGauge() != nil {
			values[name] = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return values, nil
}

// waitMetric waits until the series name reads want.
func waitMetric(url, name string, want float64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		values, err := metricValues(url)
		got, ok := values[name]
		if err == nil && ok && got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not read %v within %s (last: %v, %v)", name, want, timeout, got, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// showMetrics prints the restSeries as curl | grep would.
func showMetrics(url string) error {
	values, err := metricValues(url)
	if err != nil {
		return err
	}
	fmt.Printf("$ curl -s %s | grep -E '^(%s) '\n", url, strings.Join(restSeries, "|"))
	for _, name := range restSeries {
		fmt.Printf("%s %g\n", name, values[name])
	}
	return nil
}
