package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controller"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/plugin"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// The plugin measure (BENCH_ONLY=plugin): what `kubectl dynamic status`,
// `kubectl dynamic preview` and `kubectl dynamic wait` cost against one
// state driving many DynamicIngresses, in time and in API requests, counted
// by verb at the client's transport. Status should cost a handful of list
// calls whatever the number of switches, not one GET per switch; wait
// should return soon after the last status of a flip, and make as many
// requests whether it waits a little or long.
const (
	pluginNS = "plugin"
	// pluginReps: runs of each command; the table shows the median time
	// and the requests of one run (every run sends the same). Also the
	// flips whose wait is measured, to active and back in turn.
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

// pluginLongWaits are the timeouts of the waits on switches that never
// get in shape: a short one and a longer one.
func pluginLongWaits(cfg config) []time.Duration {
	if cfg.name == "small" {
		return []time.Duration{2 * time.Second, 4 * time.Second}
	}
	return []time.Duration{5 * time.Second, 20 * time.Second}
}

// pluginResult is the plugin measure.
type pluginResult struct {
	switches  int
	runs      []pluginRun
	waits     []pluginWait
	longWaits []pluginLongWait
}

// pluginWait is one wait (plugin.Wait) started right after the edit of a
// flip, with a new client.
type pluginWait struct {
	active bool
	// took is what wait reports: from its start to its return.
	took time.Duration
	// lastStatus and returned are measured from the edit: when the bench's
	// own watch saw the last switch's status show the new mode, and when
	// wait returned.
	lastStatus, returned time.Duration
	reqs                 requestTally
}

// delay is how long after the last status write wait returned.
func (w pluginWait) delay() time.Duration { return w.returned - w.lastStatus }

// pluginLongWait is a wait on switches that never get in shape, until its
// timeout.
type pluginLongWait struct {
	timeout, returned time.Duration
	// pending is how many things were out of shape at the timeout.
	pending int
	reqs    requestTally
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

// counted is a copy of the tally so far: a wait's informers may still be
// stopping when it is read.
func (c *countingTransport) counted() requestTally {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := requestTally{}
	for k, v := range c.tally {
		out[k] = v
	}
	return out
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

// countingClient is a client like the plugin's (plugin.RESTConfig, with
// watches for wait), new (its discovery not done yet, as in a fresh kubectl
// dynamic process), whose requests land in the returned transport's tally.
func (h *harness) countingClient() (client.WithWatch, *countingTransport, error) {
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
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: controller.NewScheme()})
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
// each, timing them and counting their API requests. Then it flips the
// state pluginReps times, to active and back, each time running wait right
// after the edit; and, with the manager stopped and the state edited once
// more (its status can no longer follow), waits until each of
// pluginLongWaits times out.
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

	for rep := range pluginReps {
		if _, err := b.waitQuiet(ctx, b.cfg.quiet, time.Minute); err != nil {
			return nil, err
		}
		w, err := b.pluginFlipWait(ctx, n, rep%2 == 0)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", err, m.check())
		}
		res.waits = append(res.waits, w)
		b.progress("plugin: wait after the flip %s of %d: returned %s after the last status (last status %s, wait returned %s after the edit; took %s); requests: %s",
			direction(w.active), n, round(w.delay()), round(w.lastStatus), round(w.returned), round(w.took), w.reqs)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stop()

	// The manager is gone: once edited, the state's status never shows
	// its spec, and wait waits until its timeout.
	code := stateCodeFor(pluginReps%2 == 0)
	if err := h.c.Patch(ctx, fixedState(pluginNS, "flip", ""), client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"fixedResponse":{"status":%q}}}`, code))); err != nil {
		return nil, err
	}
	for _, timeout := range pluginLongWaits(b.cfg) {
		w, err := b.pluginLongWait(ctx, timeout)
		if err != nil {
			return nil, err
		}
		res.longWaits = append(res.longWaits, w)
		b.progress("plugin: a wait of %s on %d switches that never get in shape: returned after %s, %d pending; requests: %s",
			timeout, n, round(w.returned), w.pending, w.reqs)
	}
	return res, h.clearNamespace(ctx, pluginNS)
}

// pluginFlipWait flips the state of the n switches to active (or passive)
// and runs wait, with a new client, as soon as the edit is answered. A
// watch of the bench's own records when each switch's status shows the
// new mode as wait requires it (diSettled), on the flip's clock.
func (b *bench) pluginFlipWait(ctx context.Context, n int, active bool) (pluginWait, error) {
	h := b.h
	w := pluginWait{active: active}
	statuses, err := watchArrivals(ctx, dynamicIngresses(h, pluginNS), n, diSettled(active))
	if err != nil {
		return w, err
	}
	defer statuses.stop()
	if statuses.before != 0 {
		return w, fmt.Errorf("plugin: %d DynamicIngresses show the new mode before the flip %s", statuses.before, direction(active))
	}
	c, counter, err := h.countingClient()
	if err != nil {
		return w, err
	}
	kinds := b.pluginKinds()
	timeout := flipTimeout(n, 100*time.Millisecond)
	t0 := time.Now()
	statuses.startAt(t0)
	patch := fmt.Sprintf(`{"spec":{"fixedResponse":{"status":%q}}}`, stateCodeFor(active))
	if err := h.c.Patch(ctx, fixedState(pluginNS, "flip", ""), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return w, err
	}
	took, report, err := plugin.Wait(ctx, c, kinds, plugin.WaitOptions{Namespace: pluginNS, State: "flip", Timeout: timeout})
	w.returned = time.Since(t0)
	if err != nil {
		return w, fmt.Errorf("plugin: wait after the flip %s of %d: %w", direction(active), n, err)
	}
	w.took, w.reqs = took, counter.counted()
	if s := report.Summary; s.Total != n || (active && s.Active != n) || (!active && s.Passive != n) || s.NotInShape != 0 {
		return w, fmt.Errorf("plugin: wait after the flip %s returned with %s, want %d switches, all %s and in shape", direction(active), s, n, shapeDir(active))
	}
	// wait saw every status show the new mode: the bench's watch sees it
	// too, at most a moment later.
	if err := statuses.wait(30 * time.Second); err != nil {
		return w, fmt.Errorf("plugin: wait after the flip %s returned, but the statuses: %w", direction(active), err)
	}
	w.lastStatus = maxDuration(statuses.durations())
	return w, nil
}

// pluginLongWait runs wait, with a new client, on switches that never get
// in shape, until it times out after timeout.
func (b *bench) pluginLongWait(ctx context.Context, timeout time.Duration) (pluginLongWait, error) {
	w := pluginLongWait{timeout: timeout}
	c, counter, err := b.h.countingClient()
	if err != nil {
		return w, err
	}
	kinds := b.pluginKinds()
	t0 := time.Now()
	_, _, err = plugin.Wait(ctx, c, kinds, plugin.WaitOptions{Namespace: pluginNS, State: "flip", Timeout: timeout})
	w.returned = time.Since(t0)
	var timedOut *plugin.TimeoutError
	if !errors.As(err, &timedOut) {
		return w, fmt.Errorf("plugin: a wait of %s on switches that never get in shape: want a timeout, got %v", timeout, err)
	}
	w.pending, w.reqs = len(timedOut.Pending), counter.counted()
	return w, nil
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
	run.reqs, run.shown = counter.counted(), shown
	return nil
}

// summaryRows adds the plugin's figures to the summary table: the requests
// of status beside one GET per switch; wait's return after the last status
// beside the flip itself; the requests of the longer wait beside the
// shorter one's.
func (r *pluginResult) summaryRows(sum *table) {
	for _, run := range r.runs {
		if run.command != "status" {
			continue
		}
		sum.add(fmt.Sprintf("kubectl dynamic status, %d switches: API requests (%s)", r.switches, run.reqs),
			fmt.Sprint(run.reqs.total()), "one GET per switch", fmt.Sprint(r.switches), ratio(float64(run.reqs.total()), float64(r.switches)))
	}
	if len(r.waits) > 0 {
		delays, last := r.waitFigures()
		sum.add(fmt.Sprintf("kubectl dynamic wait after a flip of %d switches: returned after the last status write (median of %d, max %s)",
			r.switches, len(r.waits), round(maxDuration(delays))),
			round(median(delays)), "the flip itself: edit → last status (median)", round(median(last)), durRatio(median(delays), median(last)))
	}
	if n := len(r.longWaits); n >= 2 {
		short, long := r.longWaits[0], r.longWaits[n-1]
		sum.add(fmt.Sprintf("kubectl dynamic wait, %d switches never in shape: API requests of a %s wait (%s)", r.switches, long.timeout, long.reqs),
			fmt.Sprint(long.reqs.total()), fmt.Sprintf("a %s wait", short.timeout), fmt.Sprint(short.reqs.total()),
			ratio(float64(long.reqs.total()), float64(short.reqs.total())))
	}
}

// waitFigures are, for each flip's wait, its return after the last status
// and the last status after the edit.
func (r *pluginResult) waitFigures() (delays, last []time.Duration) {
	for _, w := range r.waits {
		delays = append(delays, w.delay())
		last = append(last, w.lastStatus)
	}
	return delays, last
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
	if len(r.waits) > 0 {
		delays, _ := r.waitFigures()
		fmt.Fprintf(&sb, "\n`wait` after a flip: the state's `spec.fixedResponse.status` is patched, to active and back in turn, and plugin.Wait starts with a new client as soon as the patch is answered. ")
		fmt.Fprintf(&sb, "A watch of the bench's own on the namespace's DynamicIngresses records, on the flip's clock, when each status first shows the new mode as `wait` requires it (Active and Ready True at the current generation); ")
		fmt.Fprintf(&sb, "\"after the last status\" is the time from that watch's last arrival to `wait`'s return: median %s, max %s over %d flips. ",
			round(median(delays)), round(maxDuration(delays)), len(r.waits))
		fmt.Fprintf(&sb, "A flip that ends before `wait` has listed and started watching (a few switches) leaves in it `wait`'s own start (discovery, lists, watches).\n\n")
		wt := &table{header: []string{"flip", "switches", "last status after the edit", "wait returned after the edit", "after the last status", "wait took", "list", "watch", "discovery", "every request"}}
		for _, w := range r.waits {
			wt.add(direction(w.active), fmt.Sprint(r.switches), round(w.lastStatus), round(w.returned), round(w.delay()), round(w.took),
				fmt.Sprint(w.reqs["list"]), fmt.Sprint(w.reqs["watch"]), fmt.Sprint(w.reqs["discovery"]), w.reqs.String())
		}
		sb.WriteString(wt.String())
	}
	if len(r.longWaits) > 0 {
		fmt.Fprintf(&sb, "\n`wait` that never returns done: the manager stopped, the state patched once more, so its status never shows its spec; plugin.Wait with a new client until it times out. The longer wait should add at most a handful of requests.\n\n")
		lt := &table{header: []string{"timeout", "switches", "returned after", "pending at the timeout", "list", "watch", "discovery", "every request", "requests"}}
		for _, w := range r.longWaits {
			lt.add(w.timeout.String(), fmt.Sprint(r.switches), round(w.returned), fmt.Sprint(w.pending),
				fmt.Sprint(w.reqs["list"]), fmt.Sprint(w.reqs["watch"]), fmt.Sprint(w.reqs["discovery"]), w.reqs.String(), fmt.Sprint(w.reqs.total()))
		}
		sb.WriteString(lt.String())
	}
	return sb.String()
}
