package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// targetSeries is the per-target series (dynamicingress_active,
// dynamicingress_switches_total, dynamicingress_not_served_total). A
// GaugeVec or CounterVec keeps a metric object per series, about a
// kilobyte: three series for each of 10 000 switches were a third of the
// manager's live heap at rest (docs/benchmarks.md, "Memory at rest"). Here
// a target keeps its values and its label pairs, the namespace, name and
// kind pairs shared by its series, and a scrape makes one small metric per
// series that writes them (targetMetric): no label pairs are made per
// scrape, as a const metric would.
type targetSeries struct {
	active, switches, notServed *prometheus.Desc

	mu      sync.Mutex
	targets map[targetKey]*targetValues
}

// targetValues are one target's series.
type targetValues struct {
	// activeLabels are the labels of its active series (with the state it
	// follows), nil until SetActive; switchLabels those of its switches
	// series, to active and to passive, and notServedLabels of its
	// not served series. Each series exists once it has labels.
	activeLabels, notServedLabels []*dto.LabelPair
	switchLabels                  [2][]*dto.LabelPair
	active                        bool
	state                         string
	// switches are its switches to active and to passive; notServed its
	// writes not served.
	switches  [2]float64
	notServed float64
}

// The label names, and the values of "to", shared by every series.
var (
	labelKind, labelName, labelNamespace, labelState, labelTo = ptr("kind"), ptr("name"), ptr("namespace"), ptr("state"), ptr("to")
	toPairs                                                   = [2]*dto.LabelPair{{Name: labelTo, Value: ptr("active")}, {Name: labelTo, Value: ptr("passive")}}
)

func ptr(s string) *string { return &s }

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
	for _, v := range t.targets {
		if v.activeLabels != nil {
			ch <- &targetMetric{desc: t.active, labels: v.activeLabels, value: boolFloat(v.active), gauge: true}
		}
		for i, labels := range v.switchLabels {
			if labels != nil {
				ch <- &targetMetric{desc: t.switches, labels: labels, value: v.switches[i]}
			}
		}
		if v.notServedLabels != nil {
			ch <- &targetMetric{desc: t.notServed, labels: v.notServedLabels, value: v.notServed}
		}
	}
}

// targetMetric is one series of a target at a scrape.
type targetMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	gauge  bool
}

// Desc implements prometheus.Metric.
func (m *targetMetric) Desc() *prometheus.Desc { return m.desc }

// Write implements prometheus.Metric: the target's label pairs, which the
// registry reads only.
func (m *targetMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	v := m.value
	if m.gauge {
		out.Gauge = &dto.Gauge{Value: &v}
	} else {
		out.Counter = &dto.Counter{Value: &v}
	}
	return nil
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

// base is the target's namespace, name and kind pairs, sorted by name as
// the exposition needs them, shared by its series once made.
func (v *targetValues) base(k targetKey) []*dto.LabelPair {
	for _, labels := range [][]*dto.LabelPair{v.activeLabels, v.switchLabels[0], v.switchLabels[1], v.notServedLabels} {
		if labels != nil {
			return labels[:3:3]
		}
	}
	return []*dto.LabelPair{{Name: labelKind, Value: ptr(k.kind)}, {Name: labelName, Value: ptr(k.name)}, {Name: labelNamespace, Value: ptr(k.namespace)}}
}

// with is base and one more pair, in a slice of its own.
func with(base []*dto.LabelPair, pair *dto.LabelPair) []*dto.LabelPair {
	return append(append(make([]*dto.LabelPair, 0, len(base)+1), base...), pair)
}

// switchesLocked makes the target's switches series to active (0) or
// passive (1).
func (v *targetValues) switchesLocked(k targetKey, i int) {
	if v.switchLabels[i] == nil {
		v.switchLabels[i] = with(v.base(k), toPairs[i])
	}
}

// setActive records the target's mode and state: one active series per
// target, with the state it follows now; both switch counters exist from
// the first call, at zero, so that the first switch after a start shows
// in increase().
func (t *targetSeries) setActive(k targetKey, state string, active bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.valuesLocked(k)
	if v.activeLabels == nil || v.state != state {
		v.activeLabels = with(v.base(k), &dto.LabelPair{Name: labelState, Value: ptr(state)})
		v.state = state
	}
	v.active = active
	v.switchesLocked(k, 0)
	v.switchesLocked(k, 1)
}

// recordSwitch counts a switch of the target.
func (t *targetSeries) recordSwitch(k targetKey, toActive bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.valuesLocked(k)
	i := 1
	if toActive {
		i = 0
	}
	v.switchesLocked(k, i)
	v.switches[i]++
}

// countNotServed counts a write of the target that was not served.
func (t *targetSeries) countNotServed(k targetKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := t.valuesLocked(k)
	if v.notServedLabels == nil {
		v.notServedLabels = v.base(k)
	}
	v.notServed++
}

// forget drops every series of the target.
func (t *targetSeries) forget(k targetKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.targets, k)
}
