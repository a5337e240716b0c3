package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
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
	if _, err := waitMetric(metricsURL, "dynamicingress_manager_memory_at_rest", 1, 90*time.Second); err != nil {
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
	if _, err := waitMetric(metricsURL, "dynamicingress_manager_memory_at_rest", 0, 10*time.Second); err != nil {
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

// metricValues reads the restSeries' values from the manager's metrics.
func metricValues(url string) (map[string]string, error) {
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
	values := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && !strings.HasPrefix(name, "#") {
			values[name] = value
		}
	}
	return values, sc.Err()
}

// waitMetric waits until the series name reads want.
func waitMetric(url, name string, want float64, timeout time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		values, err := metricValues(url)
		if err == nil && values[name] == fmt.Sprint(want) {
			return values, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s did not read %v within %s (last: %q, %v)", name, want, timeout, values[name], err)
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
		fmt.Printf("%s %s\n", name, values[name])
	}
	return nil
}
