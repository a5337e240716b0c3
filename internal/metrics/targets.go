package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// targetSeries is the per-target series (dynamicingress_active,
// dynamicingress_switches_total, dynamicingress_not_served_total), kept as
// a few numbers per target and turned into metrics only when scraped. A
// GaugeVec or CounterVec keeps a metric object with its label pairs for
// each series, about a kilobyte: three series for each of 10 000 switches
// were a third of the manager's live heap at rest (docs/benchmarks.md,
// "Memory at rest").
type targetSeries struct {
	active, switches, notServed *prometheus.Desc

	mu      sync.Mutex
	targets map[targetKey]*targetValues
}

// targetValues are one target's series.
type targetValues struct {
	// state is the state label of its active series, which exists once
	// known (SetActive).
	state  string
	known  bool
	active bool
	// toActive and toPassive are its switches, notServed its writes not
	// served; each series exists once seen.
	toActive, toPassive, notServed             float64
	toActiveSeen, toPassiveSeen, notServedSeen bool
}

var _ prometheus.Collector = (*targetSeries)(nil)

func newTargetSeries() *targetSeries {
	return &targetSeries{
		active: prometheus.NewDesc(ActiveName,
			"1 while the object's target has its active shape, 0 while it has its passive shape; state is the DynamicIngressState it follows.",
			[]string{"namespace", "name", "kind", "state"}, nil),
		switches: prometheus.NewDesc(SwitchesName,
			"Switches of the object's target between its passive and active shapes, by the mode switched to (active or passive). The first mode at creation is not a switch.",
			[]string{"namespace", "name", "kind", "to"}, nil),
		notServed: prometheus.NewDesc(NotServedName,
			"Target writes whose shape spec.served.url did not answer with within spec.served.timeout (the Served condition turning False).",
			[]string{"namespace", "name", "kind"}, nil),
		targets: map[targetKey]*targetValues{},
	}
}

// Describe implements prometheus.Collector.
func (t *targetSeries) Describe(ch chan<- *prometheus.Desc) {
	ch <- t.active
	ch <- t.switches
	ch <- t.notServed
}

// Collect implements prometheus.Collector.
func (t *targetSeries) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.targets {
		if v.known {
			ch <- prometheus.MustNewConstMetric(t.active, prometheus.GaugeValue, boolFloat(v.active), k.namespace, k.name, k.kind, v.state)
		}
		if v.toActiveSeen {
			ch <- prometheus.MustNewConstMetric(t.switches, prometheus.CounterValue, v.toActive, k.namespace, k.name, k.kind, "active")
		}
		if v.toPassiveSeen {
			ch <- prometheus.MustNewConstMetric(t.switches, prometheus.CounterValue, v.toPassive, k.namespace, k.name, k.kind, "passive")
		}
		if v.notServedSeen {
			ch <- prometheus.MustNewConstMetric(t.notServed, prometheus.CounterValue, v.notServed, k.namespace, k.name, k.kind)
		}
	}
}

// valuesLocked is the target's values, made when it has none.
func (t *targetSeries) valuesLocked(k targetKey) *targetValues {
	v := t.targets[k]
	if v == nil {
		v = &targetValues{}
		t.targets[k] = v
	}
	return v
}

// setActive records the target's mode and state: one active series per
// target, with the state it follows now; both switch counters exist from
// the first call, at zero, so that the first switch after a start shows
// in increase().
func (t *targetSeries) setActive(k targetKey, state string, active bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.valuesLocked(k)
	v.state, v.known, v.active = state, true, active
	v.toActiveSeen, v.toPassiveSeen = true, true
}

// recordSwitch counts a switch of the target.
func (t *targetSeries) recordSwitch(k targetKey, toActive bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.valuesLocked(k)
	if toActive {
		v.toActive, v.toActiveSeen = v.toActive+1, true
	} else {
		v.toPassive, v.toPassiveSeen = v.toPassive+1, true
	}
}

// countNotServed counts a write of the target that was not served.
func (t *targetSeries) countNotServed(k targetKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.valuesLocked(k)
	v.notServed++
	v.notServedSeen = true
}

// forget drops every series of the target.
func (t *targetSeries) forget(k targetKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.targets, k)
}
