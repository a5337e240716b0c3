package metrics

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// fresh makes the package functions write to a new, empty set for the
// length of the test, and returns it.
func fresh(t *testing.T) *set {
	t.Helper()
	s, saved := newSet(), current
	current = s
	t.Cleanup(func() { current = saved })
	return s
}

// scrape returns the sample lines a scrape of the set shows for the named
// metrics (histograms: their _bucket, _sum and _count lines), in
// exposition order.
func scrape(t *testing.T, s *set, names ...string) []string {
	t.Helper()
	var lines []string
	for _, c := range s.collectors() {
		out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, names...)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

func TestSetActive(t *testing.T) {
	tests := []struct {
		name  string
		calls func()
		want  []string
	}{{
		name:  "an active DynamicIngress; its switch counters start at zero",
		calls: func() { SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", true) },
		want: []string{
			`dynamicingress_active{kind="DynamicIngress",name="storefront",namespace="shop",state="killswitch"} 1`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="active"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="passive"} 0`,
		},
	}, {
		name: "a passive one after an active one: the same series reads 0",
		calls: func() {
			SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", true)
			SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", false)
		},
		want: []string{
			`dynamicingress_active{kind="DynamicIngress",name="storefront",namespace="shop",state="killswitch"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="active"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="passive"} 0`,
		},
	}, {
		name: "another state: the series of the old state is gone",
		calls: func() {
			SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", true)
			SetActive(KindDynamicIngress, "shop", "storefront", "maintenance", false)
		},
		want: []string{
			`dynamicingress_active{kind="DynamicIngress",name="storefront",namespace="shop",state="maintenance"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="active"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="passive"} 0`,
		},
	}, {
		name: "objects of another kind, name or namespace keep their own series",
		calls: func() {
			SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", true)
			SetActive(KindDynamicHTTPRoute, "shop", "storefront", "maintenance", false)
			SetActive(KindDynamicIngress, "blog", "storefront", "maintenance", false)
			SetActive(KindDynamicIngress, "shop", "storefront", "maintenance", true)
		},
		want: []string{
			`dynamicingress_active{kind="DynamicHTTPRoute",name="storefront",namespace="shop",state="maintenance"} 0`,
			`dynamicingress_active{kind="DynamicIngress",name="storefront",namespace="blog",state="maintenance"} 0`,
			`dynamicingress_active{kind="DynamicIngress",name="storefront",namespace="shop",state="maintenance"} 1`,
			`dynamicingress_switches_total{kind="DynamicHTTPRoute",name="storefront",namespace="shop",to="active"} 0`,
			`dynamicingress_switches_total{kind="DynamicHTTPRoute",name="storefront",namespace="shop",to="passive"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="blog",to="active"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="blog",to="passive"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="active"} 0`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="passive"} 0`,
		},
	}, {
		name: "a switch already counted survives a repeated SetActive",
		calls: func() {
			SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", false)
			RecordSwitch(KindDynamicIngress, "shop", "storefront", true, 0, false)
			SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", true)
		},
		want: []string{
			`dynamicingress_active{kind="DynamicIngress",name="storefront",namespace="shop",state="killswitch"} 1`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="active"} 1`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="passive"} 0`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fresh(t)
			tt.calls()
			if diff := cmp.Diff(tt.want, scrape(t, s, ActiveName, SwitchesName)); diff != "" {
				t.Errorf("scrape (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecordSwitch(t *testing.T) {
	tests := []struct {
		name  string
		calls func()
		want  []string
	}{{
		name: "switches by direction; latency observed when known",
		calls: func() {
			RecordSwitch(KindDynamicIngress, "shop", "storefront", true, 40*time.Millisecond, true)
			RecordSwitch(KindDynamicIngress, "shop", "storefront", false, 3*time.Second, true)
			RecordSwitch(KindDynamicIngress, "shop", "storefront", true, 0, false)
		},
		want: []string{
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="active"} 2`,
			`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="passive"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="0.005"} 0`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="0.01"} 0`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="0.025"} 0`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="0.05"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="0.1"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="0.25"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="0.5"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="1"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="2.5"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="5"} 2`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="10"} 2`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="20"} 2`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="30"} 2`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="60"} 2`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicIngress",le="+Inf"} 2`,
			`dynamicingress_switch_latency_seconds_sum{kind="DynamicIngress"} 3.04`,
			`dynamicingress_switch_latency_seconds_count{kind="DynamicIngress"} 2`,
		},
	}, {
		name: "a negative latency (clock skew between replicas) counts as zero",
		calls: func() {
			RecordSwitch(KindDynamicHTTPRoute, "shop", "api", true, -2*time.Second, true)
		},
		want: []string{
			`dynamicingress_switches_total{kind="DynamicHTTPRoute",name="api",namespace="shop",to="active"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="0.005"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="0.01"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="0.025"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="0.05"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="0.1"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="0.25"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="0.5"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="1"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="2.5"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="5"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="10"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="20"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="30"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="60"} 1`,
			`dynamicingress_switch_latency_seconds_bucket{kind="DynamicHTTPRoute",le="+Inf"} 1`,
			`dynamicingress_switch_latency_seconds_sum{kind="DynamicHTTPRoute"} 0`,
			`dynamicingress_switch_latency_seconds_count{kind="DynamicHTTPRoute"} 1`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fresh(t)
			tt.calls()
			if diff := cmp.Diff(tt.want, scrape(t, s, SwitchesName, SwitchLatencyName)); diff != "" {
				t.Errorf("scrape (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForgetTarget(t *testing.T) {
	s := fresh(t)
	SetActive(KindDynamicIngress, "shop", "storefront", "killswitch", true)
	RecordSwitch(KindDynamicIngress, "shop", "storefront", true, time.Second, true)
	SetActive(KindDynamicIngress, "shop", "outage", "killswitch", false)
	SetActive(KindDynamicHTTPRoute, "shop", "storefront", "killswitch", false)

	ForgetTarget(KindDynamicIngress, "shop", "storefront")
	want := []string{
		`dynamicingress_active{kind="DynamicHTTPRoute",name="storefront",namespace="shop",state="killswitch"} 0`,
		`dynamicingress_active{kind="DynamicIngress",name="outage",namespace="shop",state="killswitch"} 0`,
		`dynamicingress_switches_total{kind="DynamicHTTPRoute",name="storefront",namespace="shop",to="active"} 0`,
		`dynamicingress_switches_total{kind="DynamicHTTPRoute",name="storefront",namespace="shop",to="passive"} 0`,
		`dynamicingress_switches_total{kind="DynamicIngress",name="outage",namespace="shop",to="active"} 0`,
		`dynamicingress_switches_total{kind="DynamicIngress",name="outage",namespace="shop",to="passive"} 0`,
	}
	if diff := cmp.Diff(want, scrape(t, s, ActiveName, SwitchesName)); diff != "" {
		t.Errorf("after ForgetTarget (-want +got):\n%s", diff)
	}
	// The latency histogram is by kind: a deleted object's switches stay
	// in it.
	if got := testutil.CollectAndCount(s.switchLatency); got != 1 {
		t.Errorf("%d latency series after ForgetTarget, want 1 (the kind's)", got)
	}

	// Recreated under the same name, it starts from zero, with the state
	// it now follows.
	SetActive(KindDynamicIngress, "shop", "storefront", "maintenance", false)
	want = []string{
		`dynamicingress_active{kind="DynamicIngress",name="storefront",namespace="shop",state="maintenance"} 0`,
		`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="active"} 0`,
		`dynamicingress_switches_total{kind="DynamicIngress",name="storefront",namespace="shop",to="passive"} 0`,
	}
	got := scrape(t, s, ActiveName, SwitchesName)
	got = slices.DeleteFunc(got, func(l string) bool { return !strings.Contains(l, `kind="DynamicIngress",name="storefront"`) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recreated (-want +got):\n%s", diff)
	}
}

// zeroFailures are the failure counters a probed state starts with.
func zeroFailures(namespace, name string, except ...string) []string {
	var out []string
	for _, r := range []string{"connect", "denied", "dns", "expression", "http", "read", "secret", "timeout", "tls"} {
		if !slices.Contains(except, r) {
			out = append(out, `dynamicingressstate_probe_failures_total{name="`+name+`",namespace="`+namespace+`",reason="`+r+`"} 0`)
		}
	}
	return out
}

func TestObserveProbe(t *testing.T) {
	tests := []struct {
		name  string
		calls func()
		want  []string
	}{{
		name:  "a successful probe: its duration; every failure reason at zero",
		calls: func() { ObserveProbe("shop", "flags", 30*time.Millisecond, "") },
		want: append([]string{
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.005"} 0`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.01"} 0`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.025"} 0`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.05"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.1"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.25"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.5"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="1"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="2.5"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="5"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="10"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="30"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="+Inf"} 1`,
			`dynamicingressstate_probe_duration_seconds_sum{name="flags",namespace="shop"} 0.03`,
			`dynamicingressstate_probe_duration_seconds_count{name="flags",namespace="shop"} 1`,
		}, zeroFailures("shop", "flags")...),
	}, {
		name: "failed probes count by reason, and their durations too",
		calls: func() {
			ObserveProbe("shop", "flags", 5250*time.Millisecond, "timeout")
			ObserveProbe("shop", "flags", 5250*time.Millisecond, "timeout")
			ObserveProbe("shop", "flags", 2*time.Millisecond, "dns")
		},
		want: []string{
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.005"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.01"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.025"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.05"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.1"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.25"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="0.5"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="1"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="2.5"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="5"} 1`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="10"} 3`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="30"} 3`,
			`dynamicingressstate_probe_duration_seconds_bucket{name="flags",namespace="shop",le="+Inf"} 3`,
			`dynamicingressstate_probe_duration_seconds_sum{name="flags",namespace="shop"} 10.502`,
			`dynamicingressstate_probe_duration_seconds_count{name="flags",namespace="shop"} 3`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="connect"} 0`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="denied"} 0`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="dns"} 1`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="expression"} 0`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="http"} 0`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="read"} 0`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="secret"} 0`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="timeout"} 2`,
			`dynamicingressstate_probe_failures_total{name="flags",namespace="shop",reason="tls"} 0`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fresh(t)
			tt.calls()
			if diff := cmp.Diff(tt.want, scrape(t, s, ProbeDurationName, ProbeFailuresName)); diff != "" {
				t.Errorf("scrape (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetStateUp(t *testing.T) {
	s := fresh(t)
	SetStateUp("shop", "flags", true)
	SetStateUp("shop", "killswitch", true)
	SetStateUp("shop", "flags", false)
	want := []string{
		`dynamicingressstate_up{name="flags",namespace="shop"} 0`,
		`dynamicingressstate_up{name="killswitch",namespace="shop"} 1`,
	}
	if diff := cmp.Diff(want, scrape(t, s, StateUpName)); diff != "" {
		t.Errorf("scrape (-want +got):\n%s", diff)
	}
}

func TestForgetState(t *testing.T) {
	tests := []struct {
		name   string
		forget func(namespace, name string)
		want   []string
	}{{
		name:   "a deleted state loses every series",
		forget: ForgetState,
		want: append([]string{
			`dynamicingressstate_probe_duration_seconds_sum{name="other",namespace="shop"} 0.1`,
			`dynamicingressstate_probe_duration_seconds_count{name="other",namespace="shop"} 1`,
		}, append(zeroFailures("shop", "other"),
			`dynamicingressstate_up{name="other",namespace="shop"} 1`,
		)...),
	}, {
		name:   "a state no longer probed loses its probe series, keeps up",
		forget: ForgetProbes,
		want: append([]string{
			`dynamicingressstate_probe_duration_seconds_sum{name="other",namespace="shop"} 0.1`,
			`dynamicingressstate_probe_duration_seconds_count{name="other",namespace="shop"} 1`,
		}, append(zeroFailures("shop", "other"),
			`dynamicingressstate_up{name="flags",namespace="shop"} 0`,
			`dynamicingressstate_up{name="other",namespace="shop"} 1`,
		)...),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fresh(t)
			ObserveProbe("shop", "flags", time.Second, "connect")
			SetStateUp("shop", "flags", false)
			ObserveProbe("shop", "other", 100*time.Millisecond, "")
			SetStateUp("shop", "other", true)

			tt.forget("shop", "flags")
			got := slices.DeleteFunc(scrape(t, s, ProbeDurationName, ProbeFailuresName, StateUpName), func(l string) bool {
				return strings.Contains(l, "_bucket{")
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scrape (-want +got):\n%s", diff)
			}

			// Probed again (a new state of that name), its failure
			// counters start at zero again.
			ObserveProbe("shop", "flags", time.Second, "")
			if got := testutil.CollectAndCount(s.probeFailures); got != 2*len(FailureReasons) {
				t.Errorf("%d failure series after probing again, want %d", got, 2*len(FailureReasons))
			}
		})
	}
}

// TestRegistered checks that the metrics are served on controller-runtime's
// registry (the manager's /metrics), under the names the dashboard uses.
func TestRegistered(t *testing.T) {
	SetActive(KindDynamicIngress, "registered-test", "di", "s", true)
	RecordSwitch(KindDynamicIngress, "registered-test", "di", true, time.Second, true)
	ObserveProbe("registered-test", "s", time.Second, "tls")
	SetStateUp("registered-test", "s", true)
	t.Cleanup(func() {
		ForgetTarget(KindDynamicIngress, "registered-test", "di")
		ForgetState("registered-test", "s")
	})
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "dynamicingress") {
			got = append(got, f.GetName()+" "+f.GetType().String())
		}
	}
	want := []string{
		"dynamicingress_active GAUGE",
		"dynamicingress_switch_latency_seconds HISTOGRAM",
		"dynamicingress_switches_total COUNTER",
		"dynamicingressstate_probe_duration_seconds HISTOGRAM",
		"dynamicingressstate_probe_failures_total COUNTER",
		"dynamicingressstate_up GAUGE",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("families on the manager's registry (-want +got):\n%s", diff)
	}
}

// TestFailureReasonsAreTheProbers checks the reasons this package starts
// at zero against the ones the prober reports.
func TestFailureReasonsAreTheProbers(t *testing.T) {
	var want []string
	for _, r := range []probe.FailureReason{probe.ReasonDNS, probe.ReasonConnect, probe.ReasonTLS, probe.ReasonTimeout, probe.ReasonDenied, probe.ReasonHTTP, probe.ReasonRead, probe.ReasonExpression, probe.ReasonSecret} {
		want = append(want, string(r))
	}
	if diff := cmp.Diff(want, FailureReasons); diff != "" {
		t.Errorf("FailureReasons (-want +got):\n%s", diff)
	}
}

// TestTargetSeriesMemory: the per-target series of 10 000 targets (their
// mode, both switch counters) keep their values and label pairs, the
// namespace, name and kind pairs shared, in well under a kilobyte each,
// not a metric object per series (a GaugeVec and a CounterVec kept about
// 2.3 KiB a target here, 3 KiB in the manager); the label values are the
// caller's strings, as a reconcile's request holds them.
func TestTargetSeriesMemory(t *testing.T) {
	const (
		targets = 10_000
		budget  = 800
	)
	names := make([]targetKey, targets)
	for i := range names {
		names[i] = targetKey{kind: "DynamicIngress", namespace: fmt.Sprintf("team-%03d", i%100), name: fmt.Sprintf("storefront-%05d", i)}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newSet()
	for i, k := range names {
		s.setActive(k.kind, k.namespace, k.name, "killswitch", i%2 == 0)
	}
	s.recordSwitch(names[0].kind, names[0].namespace, names[0].name, true, 0, false)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTarget := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / targets
	t.Logf("%d bytes a target", perTarget)
	if perTarget > budget {
		t.Errorf("the per-target series keep %d bytes a target, want at most %d", perTarget, budget)
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(names)
}
