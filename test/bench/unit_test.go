package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// The pure helpers of the harness; these run in every `go test ./...`.

func TestParseMetrics(t *testing.T) {
	text := `# HELP apiserver_request_total Counter
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="networking.k8s.io",resource="ingresses",scope="resource",subresource="",verb="APPLY",version="v1"} 12
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="networking.k8s.io",resource="ingresses",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="ingress.dynamicingress.io",resource="dynamicingresses",scope="resource",subresource="status",verb="PATCH",version="v1beta1"} 5
apiserver_request_total{code="429",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 1
go_memstats_heap_alloc_bytes 1.5e+07
odd_metric{path="a \"quoted\" value",x="y"} 2
`
	m := parseMetrics(text, nil)
	if got := m.sum("go_memstats_heap_alloc_bytes", nil); got != 1.5e7 {
		t.Errorf("heap = %g", got)
	}
	if got := m.sum("odd_metric", map[string]string{"path": `a "quoted" value`}); got != 2 {
		t.Errorf("quoted label: %g", got)
	}
	r := requestCounts(parseMetrics(text, apiserverPrefixes))
	if got := r.writes(""); got != 20 {
		t.Errorf("writes = %g, want 20 (dry runs and reads excluded)", got)
	}
	if got := r.writes("dynamicingresses/status"); got != 5 {
		t.Errorf("status writes = %g, want 5", got)
	}
	if got := r.code("429"); got != 1 {
		t.Errorf("429s = %g", got)
	}
	if got := r.sub(requests{{"APPLY", "ingresses", "200"}: 10}).writes("ingresses"); got != 2 {
		t.Errorf("diffed Ingress writes = %g, want 2", got)
	}
	if got := r.writeSummary(); got != "APPLY ingresses 12, PATCH dynamicingresses/status 5, POST events 3" {
		t.Errorf("summary = %q", got)
	}
}

func TestHistogram(t *testing.T) {
	text := `q_bucket{le="0.1"} 50
q_bucket{le="1"} 90
q_bucket{le="+Inf"} 100
q_sum 40
q_count 100
`
	h := parseMetrics(text, nil).histogram("q", nil)
	if h.mean() != 0.4 {
		t.Errorf("mean = %g", h.mean())
	}
	if d := h.sub(h); d.count != 0 || d.mean() != 0 {
		t.Errorf("empty difference: %+v", d)
	}
}

func TestPercentileAndMedian(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(ds, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %s", got)
	}
	if got := percentile(ds, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %s", got)
	}
	if got := median([]time.Duration{3, 1, 2, 10}); got != 2 {
		t.Errorf("median = %d", got)
	}
}

func TestReplaceGenerated(t *testing.T) {
	doc := "# Benchmarks\n\nHand-written.\n\n" + beginMarker + "\nold\n" + endMarker + "\n\n## After\n\nKept.\n"
	out, err := replaceGenerated(doc, "new table")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "old") || !strings.Contains(out, "new table") || !strings.Contains(out, "Hand-written.") || !strings.Contains(out, "## After\n\nKept.") {
		t.Errorf("rewritten doc:\n%s", out)
	}
	again, _ := replaceGenerated(out, "new table")
	if again != out {
		t.Errorf("a second rewrite changed the doc:\n%s", again)
	}
	fresh, err := replaceGenerated("", "t")
	if err != nil || !strings.HasPrefix(fresh, "# Benchmarks") || !strings.Contains(fresh, endMarker) {
		t.Errorf("fresh doc: %q, %v", fresh, err)
	}
	if _, err := replaceGenerated(endMarker+beginMarker, "t"); err == nil {
		t.Error("markers out of order were accepted")
	}
}

func TestShapes(t *testing.T) {
	for _, active := range []bool{true, false} {
		ing := baselineIngress("ns", "a", active)
		if !hasShape(ing, active) || hasShape(ing, !active) {
			t.Errorf("baselineIngress(active=%v) does not have exactly its shape", active)
		}
		di := dynamicIngress("ns", "a", "s")
		tpl := di.Spec.PassiveIngress.Template
		if active {
			tpl = di.Spec.ActiveIngress.Template
		}
		ing.Spec, ing.Annotations = tpl.Spec, tpl.Metadata.Annotations
		if !hasShape(ing, active) {
			t.Errorf("the DynamicIngress's %s template does not have its shape", direction(active))
		}
	}
	if y := string(manifestYAML("ns", "a", true)); strings.Contains(y, "status") || strings.Contains(y, "creationTimestamp") {
		t.Errorf("manifest has server fields:\n%s", y)
	}
}

func TestTimestampedAnswer(t *testing.T) {
	now := time.Date(2026, 11, 25, 6, 0, 0, 7_900_000, time.UTC)
	var answer struct {
		Status string
		Data   struct {
			ResultType string
			Result     []struct{ Value []json.RawMessage }
		}
	}
	raw := timestampedAnswer(now)
	if err := json.Unmarshal([]byte(raw), &answer); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if answer.Status != "success" || answer.Data.ResultType != "vector" || len(answer.Data.Result) != 1 || len(answer.Data.Result[0].Value) != 2 {
		t.Fatalf("not an instant query answer with one sample: %s", raw)
	}
	v := answer.Data.Result[0].Value
	if got, want := string(v[0]), "1795586400.007"; got != want {
		t.Errorf("evaluation time = %s, want %s", got, want)
	}
	if got, want := string(v[1]), `"`+timestampedValue+`"`; got != want {
		t.Errorf("value = %s, want %s", got, want)
	}
	if timestampedAnswer(now.Add(time.Second)) == raw {
		t.Error("two answers a second apart are the same")
	}
}

func TestChartMemoryLimit(t *testing.T) {
	// The scale measure reads its peak against the chart's limit: the
	// values file must keep giving one.
	if got := chartMemoryLimit(); got < 64<<20 {
		t.Errorf("chartMemoryLimit() = %d, want the chart's resources.limits.memory", got)
	}
}

func TestReloadGroups(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, 0, len(v))
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name   string
		served []time.Duration
		want   []reloadGroup
	}{
		{name: "one reload", served: ms(2100, 2050, 2200), want: []reloadGroup{{at: 2050 * time.Millisecond, hosts: 3}}},
		{name: "the first write alone, then the rest", served: ms(300, 2310, 2290, 2400),
			want: []reloadGroup{{at: 300 * time.Millisecond, hosts: 1}, {at: 2290 * time.Millisecond, hosts: 3}}},
		{name: "a slow sweep stays in its reload", served: ms(900, 1700, 2900),
			want: []reloadGroup{{at: 900 * time.Millisecond, hosts: 2}, {at: 2900 * time.Millisecond, hosts: 1}}},
		{name: "three reloads", served: ms(4400, 500, 2400, 2500, 4300),
			want: []reloadGroup{{at: 500 * time.Millisecond, hosts: 1}, {at: 2400 * time.Millisecond, hosts: 2}, {at: 4300 * time.Millisecond, hosts: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reloadGroups(tt.served)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(reloadGroup{})); diff != "" {
				t.Errorf("reloadGroups (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHalves: BENCH_SPLIT_CORES gives the proxy the lower half of the
// CPUs this process may use and the control plane the rest, sparse masks
// included, and refuses fewer than two.
func TestHalves(t *testing.T) {
	set := func(cpus ...int) unix.CPUSet {
		var s unix.CPUSet
		for _, c := range cpus {
			s.Set(c)
		}
		return s
	}
	for _, tc := range []struct {
		name           string
		all            unix.CPUSet
		proxy, control unix.CPUSet
		wantErr        string
	}{
		{"two", set(0, 1), set(0), set(1), ""},
		{"three: the control plane gets the odd one", set(0, 1, 2), set(0), set(1, 2), ""},
		{"a sparse mask", set(8, 9, 40, 1000), set(8, 9), set(40, 1000), ""},
		{"one", set(3), unix.CPUSet{}, unix.CPUSet{}, "BENCH_SPLIT_CORES needs two CPUs at least, this process has 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := halves(tc.all)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.proxy != tc.proxy || got.control != tc.control {
				t.Errorf("halves = proxy %v, control %v; want %v, %v", got.proxy, got.control, tc.proxy, tc.control)
			}
		})
	}
}
