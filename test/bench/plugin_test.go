package bench

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The plugin measure (BENCH_ONLY=plugin): what `kubectl dynamic status` and
// `kubectl dynamic preview` cost against one state driving many
// DynamicIngresses, in time and in API requests, counted by verb at the
// client's transport. Status should cost a handful of list calls whatever
// the number of switches, not one GET per switch.
const (
	pluginNS = "plugin"
	// pluginReps: runs of each command; the table shows the median time
	// and the requests of one run (every run sends the same).
	pluginReps = 3
	// pluginDryRunWorkers is cmd/kubectl-dynamic's bound on preview's dry
	// runs in flight.
	pluginDryRunWorkers = 16
)

// pluginSwitches is the number of DynamicIngresses of the plugin measure.
func pluginSwitches(cfg config) int {
	if cfg.name == "small" {
		return 50
	}
	return 2000
}

// pluginResult is the plugin measure.
type pluginResult struct {
	switches int
	runs     []pluginRun
}

// pluginRun is one command: its median time and the requests of one run.
type pluginRun struct {
	command string
	times   []time.Duration
	reqs    requestTally
	// shown is what the command found: switches for status, changes for
	// preview.
	shown int
}

// requestTally counts API requests by kind: "list", "get", "discovery",
// "patch (dry run)", "delete (dry run)", and any other verb by its name.
type requestTally map[string]int

func (t requestTally) String() string {
	var keys []string
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, t[k]))
	}
	return strings.Join(out, ", ")
}

func (t requestTally) total() int {
	n := 0
	for _, v := range t {
		n += v
	}
	return n
}

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	tally requestTally
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := requestKind(req)
	c.mu.Lock()
	c.tally[kind]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// requestKind names what an API request is: a list or a get of an object,
// discovery, or a write (marked when it is a dry run).
func requestKind(req *http.Request) string {
	path := strings.Trim(req.URL.Path, "/")
	parts := strings.Split(path, "/")
	// /api/v1/... or /apis/group/version/...
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) == 0 {
		return "discovery"
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		rest = rest[2:]
	}
	named := len(rest) >= 2
	verb := strings.ToLower(req.Method)
	switch {
	case req.Method == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "watch"
	case req.Method == http.MethodGet && named:
		verb = "get"
	case req.Method == http.MethodGet:
		verb = "list"
	}
	if req.URL.Query().Get("dryRun") != "" {
		verb += " (dry run)"
	}
	return verb
}

// countingClient is a client like the plugin's (plugin.RESTConfig), new
// (its discovery not done yet, as in a fresh kubectl dynamic process),
// whose requests land in the returned transport's tally.
func (h *harness) countingClient() (client.Client, *countingTransport, error) {
	base := rest.CopyConfig(h.cfg)
	// The bench's own config has no limit either; start from client-go's
	// defaults, as a kubeconfig does, and let the plugin set its own.
	base.QPS, base.Burst = 0, 0
	cfg := plugin.RESTConfig(base)
	counter := &countingTransport{tally: requestTally{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		counter.next = rt
		return counter
	})
	c, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
	return c, counter, err
}

// pluginKinds are the switch kinds as kubectl dynamic finds them, from
// discovery and the OpenAPI document (uncounted: a kubectl discovery
// cache usually holds them).
func (b *bench) pluginKinds() []target.Kind {
	return plugin.Kinds(discovery.NewDiscoveryClientForConfigOrDie(b.h.cfg))
}

// pluginMeasure creates one fixed state driving pluginSwitches
// DynamicIngresses, lets the manager put every target in shape, then runs
// status (plugin.Read + plugin.Status) and the preview of the flip
// (plugin.Read + plugin.Changes + plugin.DryRunDiffs) pluginReps times
// each, timing them and counting their API requests.
func (b *bench) pluginMeasure(ctx context.Context) (*pluginResult, error) {
	h := b.h
	n := pluginSwitches(b.cfg)
	res := &pluginResult{switches: n}
	if err := h.ensureNamespace(ctx, pluginNS); err != nil {
		return nil, err
	}
	m, err := h.startManager(managerOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { m.stop() }()
	ingresses, err := watchArrivals(ctx, ingressLister{h, pluginNS}, n, ingressShape(false))
	if err != nil {
		return nil, err
	}
	defer ingresses.stop()
	settled, err := watchArrivals(ctx, dynamicIngresses(h, pluginNS), n, diSettled(false))
	if err != nil {
		return nil, err
	}
	defer settled.stop()
	b.progress("plugin: creating a state and %d DynamicIngresses following it", n)
	if err := h.c.Create(ctx, fixedState(pluginNS, "flip", "503")); err != nil {
		return nil, err
	}
	if err := parallel(n, 32, func(i int) error {
		return h.c.Create(ctx, dynamicIngress(pluginNS, objName(i), "flip"))
	}); err != nil {
		return nil, fmt.Errorf("creating %d DynamicIngresses: %w", n, err)
	}
	for _, a := range []*arrivals{ingresses, settled} {
		if err := a.wait(flipTimeout(n, 100*time.Millisecond)); err != nil {
			return nil, fmt.Errorf("plugin: converging: %w (%v)", err, m.check())
		}
	}
	if _, err := b.waitQuiet(ctx, b.cfg.quiet, 2*time.Minute); err != nil {
		return nil, err
	}

	status := pluginRun{command: "status"}
	preview := pluginRun{command: "preview --status 200 (the flip)"}
	for range pluginReps {
		if err := b.pluginStatus(ctx, &status, n); err != nil {
			return nil, err
		}
		if err := b.pluginPreview(ctx, &preview, n); err != nil {
			return nil, err
		}
	}
	res.runs = []pluginRun{status, preview}
	b.progress("plugin: %d switches: status %s (%s); preview %s (%s)", n,
		round(median(status.times)), status.reqs, round(median(preview.times)), preview.reqs)
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()
	return res, h.clearNamespace(ctx, pluginNS)
}

// pluginStatus runs status once, with a new client.
func (b *bench) pluginStatus(ctx context.Context, run *pluginRun, n int) error {
	return b.pluginRun(run, func(c client.Client) (int, error) {
		_, report, err := plugin.StatusOf(ctx, c, b.pluginKinds(), pluginNS, "flip")
		if err != nil {
			return 0, err
		}
		if s := report.Summary; s.Total != n || s.Passive != n || s.NotInShape != 0 {
			return 0, fmt.Errorf("plugin: status shows %s, want %d switches, all passive and in shape", s, n)
		}
		return len(report.Switches), nil
	})
}

// pluginPreview runs the preview of the flip once, with a new client.
func (b *bench) pluginPreview(ctx context.Context, run *pluginRun, n int) error {
	return b.pluginRun(run, func(c client.Client) (int, error) {
		_, report, err := plugin.PreviewOf(ctx, c, b.pluginKinds(), pluginNS, v1beta1.StateReference{Name: "flip"}, pluginDryRunWorkers,
			func(state *v1beta1.DynamicIngressState) (*v1beta1.DynamicIngressState, error) {
				return plugin.WithAnswer(state, plugin.Answer{StatusCode: "200"}), nil
			})
		if err != nil {
			return 0, err
		}
		if changes := report.Changes; len(changes) != n || changes[0].Diff == "" {
			return 0, fmt.Errorf("plugin: preview of the flip shows %d changes, want %d, each with a diff", len(changes), n)
		}
		return len(report.Changes), nil
	})
}

// pluginRun times command, given a new counting client, into run: its time,
// its requests and how many switches it showed.
func (b *bench) pluginRun(run *pluginRun, command func(client.Client) (int, error)) error {
	c, counter, err := b.h.countingClient()
	if err != nil {
		return err
	}
	t0 := time.Now()
	shown, err := command(c)
	if err != nil {
		return err
	}
	run.times = append(run.times, time.Since(t0))
	run.reqs, run.shown = counter.tally, shown
	return nil
}

// summaryRows adds the plugin's figures to the summary table: the requests
// of status beside one GET per switch.
func (r *pluginResult) summaryRows(sum *table) {
	for _, run := range r.runs {
		if run.command != "status" {
			continue
		}
		sum.add(fmt.Sprintf("kubectl dynamic status, %d switches: API requests (%s)", r.switches, run.reqs),
			fmt.Sprint(run.reqs.total()), "one GET per switch", fmt.Sprint(r.switches), ratio(float64(run.reqs.total()), float64(r.switches)))
	}
}

func (r *pluginResult) markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "#### kubectl dynamic\n\n")
	fmt.Fprintf(&sb, "One fixed state driving %d DynamicIngresses, every target in shape, the manager running. ", r.switches)
	fmt.Fprintf(&sb, "`status` is plugin.Read + plugin.Status; `preview` is plugin.Read + plugin.Changes + plugin.DryRunDiffs (%d dry runs in flight, as the command) of the flip. ", pluginDryRunWorkers)
	fmt.Fprintf(&sb, "Each run uses a new client, as a new `kubectl dynamic` process does (its discovery included; the process's own start is not), configured as the plugin configures it (plugin.RESTConfig: no client-side rate limit); requests are counted at the client's transport. Median of %d runs.\n\n", pluginReps)
	t := &table{header: []string{"command", "switches", "shown", "time (median)", "list", "get", "dry-run requests", "discovery", "every request"}}
	for _, run := range r.runs {
		dry := 0
		for k, v := range run.reqs {
			if strings.HasSuffix(k, "(dry run)") {
				dry += v
			}
		}
		t.add(run.command, fmt.Sprint(r.switches), fmt.Sprint(run.shown), round(median(run.times)),
			fmt.Sprint(run.reqs["list"]), fmt.Sprint(run.reqs["get"]), fmt.Sprint(dry), fmt.Sprint(run.reqs["discovery"]), run.reqs.String())
	}
	sb.WriteString(t.String())
	return sb.String()
}
