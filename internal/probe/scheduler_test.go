package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// flagServer answers with the status code it holds, or stops listening.
type flagServer struct {
	*httptest.Server
	code atomic.Int32
}

func newFlagServer(t *testing.T, code int) *flagServer {
	f := &flagServer{}
	f.code.Store(int32(code))
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(f.code.Load()))
		_, _ = fmt.Fprintf(w, "code %d", f.code.Load())
	}))
	t.Cleanup(f.Close)
	return f
}

func startScheduler(t *testing.T) (*Scheduler, chan string) {
	t.Helper()
	notified := make(chan string, 100)
	s := NewScheduler(NewProber(Guard{}, 1024), clock.RealClock{}, func(key string) { notified <- key })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Scheduler did not stop within 5s of its context ending")
		}
	})
	return s, notified
}

// waitFor waits for an observation of key that satisfies ok.
func waitFor(t *testing.T, s *Scheduler, notified chan string, key string, ok func(Observation) bool) Observation {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		if obs, _ := s.Observation(key); ok(obs) {
			return obs
		}
		select {
		case <-notified:
		case <-deadline:
			obs, _ := s.Observation(key)
			t.Fatalf("observation of %s never reached the wanted value; last: %+v", key, obs)
		}
	}
}

func TestSchedulerFollowsEndpoint(t *testing.T) {
	srv := newFlagServer(t, 200)
	s, notified := startScheduler(t)
	spec := Spec{Request: Request{Method: "GET", URL: srv.URL, Timeout: time.Second}, Interval: 20 * time.Millisecond, FailureThreshold: 3}
	s.Ensure("ns/a", spec, Response{})

	waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.Response.StatusCode == "200" })
	srv.code.Store(503)
	waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.Response.StatusCode == "503" && o.Err == "" })

	srv.Close()
	first := waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.Err != "" })
	if first.ThresholdReached {
		t.Errorf("first failure already reached the threshold of 3: %+v", first)
	}
	last := waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.ThresholdReached })
	if !strings.Contains(last.Err, "connection refused") {
		t.Errorf("error after threshold = %q, want connection refused", last.Err)
	}
}

func TestSchedulerNotifiesOnlyOnChange(t *testing.T) {
	srv := newFlagServer(t, 200)
	var hits atomic.Int32
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer counted.Close()
	s, notified := startScheduler(t)
	s.Ensure("ns/a", Spec{Request: Request{Method: "GET", URL: counted.URL, Timeout: time.Second}, Interval: 10 * time.Millisecond, FailureThreshold: 1}, Response{})
	waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.Probed })
	for hits.Load() < 10 {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(notified); n != 0 {
		t.Errorf("%d notifications for an unchanged response over %d probes, want none", n, hits.Load())
	}
}

func TestSchedulerSlowEndpointDoesNotDelayOthers(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	fast := newFlagServer(t, 200)
	s, notified := startScheduler(t)
	s.Ensure("ns/slow", Spec{Request: Request{Method: "GET", URL: slow.URL, Timeout: time.Hour}, Interval: time.Hour, FailureThreshold: 1}, Response{})
	s.Ensure("ns/fast", Spec{Request: Request{Method: "GET", URL: fast.URL, Timeout: time.Second}, Interval: 10 * time.Millisecond, FailureThreshold: 1}, Response{})
	waitFor(t, s, notified, "ns/fast", func(o Observation) bool { return o.Response.StatusCode == "200" })
	fast.code.Store(418)
	waitFor(t, s, notified, "ns/fast", func(o Observation) bool { return o.Response.StatusCode == "418" })
	if obs, _ := s.Observation("ns/slow"); obs.Probed {
		t.Errorf("slow state has an observation while its endpoint hangs: %+v", obs)
	}
}

func TestSchedulerEnsureAndRemove(t *testing.T) {
	a := newFlagServer(t, 200)
	b := newFlagServer(t, 204)
	s, notified := startScheduler(t)
	spec := Spec{Request: Request{Method: "GET", URL: a.URL, Timeout: time.Second}, Interval: 10 * time.Millisecond, FailureThreshold: 1}
	s.Ensure("ns/x", spec, Response{})
	waitFor(t, s, notified, "ns/x", func(o Observation) bool { return o.Response.StatusCode == "200" })

	s.Ensure("ns/x", spec, Response{}) // same spec: keeps the observation
	if obs, _ := s.Observation("ns/x"); !obs.Probed {
		t.Errorf("Ensure with an unchanged spec reset the observation: %+v", obs)
	}
	spec.Request.URL = b.URL
	s.Ensure("ns/x", spec, Response{})
	waitFor(t, s, notified, "ns/x", func(o Observation) bool { return o.Response.StatusCode == "204" })

	s.Remove("ns/x")
	if _, ok := s.Observation("ns/x"); ok || s.Len() != 0 {
		t.Errorf("state still registered after Remove (Len %d)", s.Len())
	}
}

func TestSchedulerStartsWorkersRegisteredBeforeStart(t *testing.T) {
	srv := newFlagServer(t, 200)
	notified := make(chan string, 10)
	s := NewScheduler(NewProber(Guard{}, 1024), clock.RealClock{}, func(key string) { notified <- key })
	s.Ensure("ns/early", Spec{Request: Request{Method: "GET", URL: srv.URL, Timeout: time.Second}, Interval: time.Second, FailureThreshold: 1}, Response{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	waitFor(t, s, notified, "ns/early", func(o Observation) bool { return o.Response.StatusCode == "200" })
}

func TestPaceSpread(t *testing.T) {
	const pause = 16 * time.Second
	seen := map[bool]bool{}
	for range 200 {
		d := paceSpread(pause)
		if d < 0 || d > pause/2 {
			t.Fatalf("paceSpread(%s) = %s, want within [0, %s]", pause, d, pause/2)
		}
		seen[d < pause/4] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("paceSpread(%s) never fell in one half of its range in 200 draws", pause)
	}
	if d := paceSpread(0); d != 0 {
		t.Errorf("paceSpread(0) = %s, want 0", d)
	}
}

func TestStartJitter(t *testing.T) {
	tests := []struct {
		interval, bound time.Duration
	}{
		{10 * time.Millisecond, 10 * time.Millisecond},
		{5 * time.Second, 5 * time.Second},
		{30 * time.Second, 30 * time.Second},
		{10 * time.Minute, MaxStartJitter},
	}
	for _, tt := range tests {
		t.Run(tt.interval.String(), func(t *testing.T) {
			var longest time.Duration
			for range 200 {
				d := startJitter(tt.interval)
				if d < 0 || d >= tt.bound {
					t.Fatalf("startJitter(%s) = %s, want within [0, %s)", tt.interval, d, tt.bound)
				}
				longest = max(longest, d)
			}
			// 200 draws all in the lower half: odds of 2^-200.
			if longest < tt.bound/2 {
				t.Errorf("200 draws of startJitter(%s) all below %s, want them spread over [0, %s)", tt.interval, tt.bound/2, tt.bound)
			}
		})
	}
	if d := startJitter(0); d != 0 {
		t.Errorf("startJitter(0) = %s, want 0", d)
	}
}

// countingServer answers "probe N" to its Nth request.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, "probe %d", hits.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func startFakeScheduler(t *testing.T, jitter func(time.Duration) time.Duration) (*Scheduler, *clocktesting.FakeClock, chan string) {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	notified := make(chan string, 1000)
	s := NewScheduler(NewProber(Guard{}, 1024), fc, func(key string) { notified <- key })
	if jitter != nil {
		s.jitter = jitter
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, fc, notified
}

// waitWaiters waits until n timers or tickers wait on the fake clock.
func waitWaiters(t *testing.T, fc *clocktesting.FakeClock, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for fc.Waiters() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers wait on the clock, want %d", fc.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSchedulerKeepsStartOffset: the first probe comes after the start
// delay, and the next ones an interval apart from it, not from the start.
func TestSchedulerKeepsStartOffset(t *testing.T) {
	srv, hits := countingServer(t)
	const offset, interval = 7 * time.Second, 10 * time.Second
	s, fc, notified := startFakeScheduler(t, func(d time.Duration) time.Duration {
		if d != interval {
			t.Errorf("jitter asked for interval %s, want %s", d, interval)
		}
		return offset
	})
	s.Ensure("ns/a", Spec{Request: Request{Method: "GET", URL: srv.URL, Timeout: time.Second}, Interval: interval, FailureThreshold: 1}, Response{})
	waitWaiters(t, fc, 1)

	steps := []struct {
		step      time.Duration
		wantProbe string // "" when no probe may happen
	}{
		{offset - time.Millisecond, ""},
		{time.Millisecond, "probe 1"},
		{interval - time.Millisecond, ""},
		{time.Millisecond, "probe 2"},
		{interval, "probe 3"},
	}
	for i, st := range steps {
		fc.Step(st.step)
		if st.wantProbe == "" {
			time.Sleep(50 * time.Millisecond)
			if n := hits.Load(); n != int32(i/2) {
				t.Fatalf("step %d: %d probes, want %d", i, n, i/2)
			}
			continue
		}
		obs := waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.Response.Body == st.wantProbe })
		if obs.Err != "" || obs.Reason != "" {
			t.Errorf("step %d: failure in a successful observation: %+v", i, obs)
		}
		waitWaiters(t, fc, 1) // the ticker waits again
	}
}

// TestSchedulerSpreadsFirstProbes: states registered together start over
// their interval, not in one burst.
func TestSchedulerSpreadsFirstProbes(t *testing.T) {
	srv, hits := countingServer(t)
	s, fc, _ := startFakeScheduler(t, nil)
	const states = 60
	for i := range states {
		s.Ensure(fmt.Sprintf("ns/s%d", i), Spec{Request: Request{Method: "GET", URL: srv.URL, Timeout: time.Second}, Interval: time.Minute, FailureThreshold: 1}, Response{})
	}
	waitWaiters(t, fc, states)
	fc.Step(2 * time.Second)
	time.Sleep(200 * time.Millisecond)
	// Spread over 30s, about 4 of 60 start in the first 2s.
	if n := hits.Load(); n > states/3 {
		t.Errorf("%d of %d states probed within 2s of starting, want them spread over %s", n, states, MaxStartJitter)
	}
	fc.Step(MaxStartJitter)
	deadline := time.Now().Add(5 * time.Second)
	for hits.Load() < states && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := hits.Load(); n != states {
		t.Errorf("%d of %d states probed within %s, want all", n, states, MaxStartJitter)
	}
}

func TestSchedulerObservationReason(t *testing.T) {
	srv := newFlagServer(t, 200)
	s, notified := startScheduler(t)
	s.Ensure("ns/a", Spec{Request: Request{Method: "GET", URL: srv.URL, Timeout: time.Second}, Interval: 10 * time.Millisecond, FailureThreshold: 1}, Response{})
	ok := waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.Probed })
	if ok.Reason != "" || ok.Err != "" {
		t.Errorf("successful observation has a failure: %+v", ok)
	}
	srv.Close()
	failed := waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o.Err != "" })
	want := Observation{Probed: true, Err: "GET " + srv.URL + ": connection refused", Reason: ReasonConnect, ThresholdReached: true}
	// Observation must stay comparable: the scheduler tells a change by ==.
	if failed != want {
		t.Errorf("observation = %+v, want %+v", failed, want)
	}
}

// TestSchedulerObservesEveryProbe: every probe, failed or not, is reported
// with its reason, and none after the state is removed.
func TestSchedulerObservesEveryProbe(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer ok.Close()
	guard, _ := ParseGuard("192.0.2.0/24", "")
	s := NewScheduler(NewProber(guard, 1024), clock.RealClock{}, func(string) {})
	s.jitter = func(time.Duration) time.Duration { return 0 }
	var mu sync.Mutex
	seen := map[string][]FailureReason{}
	s.Observe = func(key string, took time.Duration, reason FailureReason) {
		if took < 0 {
			t.Errorf("negative duration %s", took)
		}
		mu.Lock()
		seen[key] = append(seen[key], reason)
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	s.Ensure("ns/up", Spec{Request: Request{Method: "GET", URL: ok.URL, Timeout: time.Second}, Interval: 20 * time.Millisecond, FailureThreshold: 1}, Response{})
	s.Ensure("ns/down", Spec{Request: Request{Method: "GET", URL: "http://192.0.2.1/", Timeout: time.Second}, Interval: 20 * time.Millisecond, FailureThreshold: 1}, Response{})
	count := func(key string) int { mu.Lock(); defer mu.Unlock(); return len(seen[key]) }
	deadline := time.Now().Add(5 * time.Second)
	for (count("ns/up") < 3 || count("ns/down") < 3) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s.Remove("ns/up")
	s.Remove("ns/down")
	after := count("ns/up") + count("ns/down")
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if got := len(seen["ns/up"]) + len(seen["ns/down"]); got != after {
		t.Errorf("%d probes observed after Remove", got-after)
	}
	for _, r := range seen["ns/up"] {
		if r != "" {
			t.Errorf("a successful probe observed with reason %q", r)
		}
	}
	for _, r := range seen["ns/down"] {
		if r != ReasonDenied {
			t.Errorf("a denied probe observed with reason %q, want denied", r)
		}
	}
	if len(seen["ns/up"]) < 3 || len(seen["ns/down"]) < 3 {
		t.Errorf("observed %d and %d probes, want at least 3 each", len(seen["ns/up"]), len(seen["ns/down"]))
	}
}

// TestTallyAfter: a response other than the state's current one is
// recorded only after SuccessThreshold probes in a row returned it;
// failures keep their own count.
func TestTallyAfter(t *testing.T) {
	r := func(code string) Response { return Response{StatusCode: code, Body: "code " + code} }
	fail := errors.New("GET http://flags.example.com/: connection refused")
	type probe struct {
		resp Response
		err  error
	}
	ok := func(code string) probe { return probe{resp: r(code)} }
	failed := probe{err: fail}
	// show summarizes an Observation: "-" before anything was recorded,
	// the status code of a response, "fail" or "fail!" once the failure
	// threshold is reached.
	show := func(o Observation) string {
		switch {
		case !o.Probed:
			return "-"
		case o.Err != "" && o.ThresholdReached:
			return "fail!"
		case o.Err != "":
			return "fail"
		}
		return o.Response.StatusCode
	}
	tests := []struct {
		name             string
		success, failure int
		current          Response
		probes           []probe
		want             []string
	}{
		{"threshold 1 records every response", 1, 3, Response{},
			[]probe{ok("200"), ok("502"), ok("200")}, []string{"200", "502", "200"}},
		{"threshold 0 counts as 1", 0, 3, Response{},
			[]probe{ok("200"), ok("502")}, []string{"200", "502"}},
		{"the current response is recorded at once", 3, 3, r("200"),
			[]probe{ok("200")}, []string{"200"}},
		{"no response is a response like any other", 3, 3, Response{},
			[]probe{ok("200"), ok("200"), ok("200"), ok("200")}, []string{"-", "-", "200", "200"}},
		{"a one-probe blip is never recorded", 3, 3, r("200"),
			[]probe{ok("200"), ok("502"), ok("200"), ok("200"), ok("502"), ok("200")}, []string{"200", "200", "200", "200", "200", "200"}},
		{"two-probe blip under a threshold of 3", 3, 3, r("200"),
			[]probe{ok("200"), ok("502"), ok("502"), ok("200")}, []string{"200", "200", "200", "200"}},
		{"a lasting change is recorded at the threshold", 3, 3, r("200"),
			[]probe{ok("200"), ok("502"), ok("502"), ok("502"), ok("502")}, []string{"200", "200", "200", "502", "502"}},
		{"a restarted worker holds the status's response", 3, 3, r("200"),
			[]probe{ok("502"), ok("502"), ok("502")}, []string{"-", "-", "502"}},
		{"the body counts, not only the code", 2, 3, r("200"),
			[]probe{ok("200"), {resp: Response{StatusCode: "200", Body: "other"}}, ok("200")}, []string{"200", "200", "200"}},
		{"a different response starts the count over", 3, 3, r("200"),
			[]probe{ok("200"), ok("502"), ok("503"), ok("502"), ok("502"), ok("502")}, []string{"200", "200", "200", "200", "200", "502"}},
		{"a failure starts the count over and is recorded at once", 3, 3, r("200"),
			[]probe{ok("200"), ok("502"), ok("502"), failed, ok("502"), ok("502"), ok("502")}, []string{"200", "200", "200", "fail", "fail", "fail", "502"}},
		{"the kept response after a failure is recorded at once", 3, 3, r("200"),
			[]probe{ok("200"), failed, ok("200")}, []string{"200", "fail", "200"}},
		{"a response ends a run of failures", 3, 2, r("200"),
			[]probe{ok("200"), failed, ok("502"), failed, failed}, []string{"200", "fail", "fail", "fail", "fail!"}},
		{"after the failure threshold the response is gone: recovery counts", 3, 2, r("200"),
			[]probe{ok("200"), failed, failed, ok("200"), ok("200"), ok("200")}, []string{"200", "fail", "fail!", "fail!", "fail!", "200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := Spec{SuccessThreshold: tt.success, FailureThreshold: tt.failure}
			tl := tally{current: tt.current}
			var got []string
			for _, p := range tt.probes {
				tl = tl.after(spec, p.resp, p.err)
				got = append(got, show(tl.obs))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("observations after each probe (-want +got):\n%s", diff)
			}
		})
	}
}

// scriptedServer answers the status code it holds, with "code N" as the
// body, and counts its requests.
type scriptedServer struct {
	*httptest.Server
	code, hits atomic.Int32
}

func newScriptedServer(t *testing.T, code int) *scriptedServer {
	s := &scriptedServer{}
	s.code.Store(int32(code))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c := s.code.Load()
		w.WriteHeader(int(c))
		_, _ = fmt.Fprintf(w, "code %d", c)
		s.hits.Add(1)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestSchedulerSuccessThreshold: with a threshold of 3, a one-probe 502
// between 200s neither changes the observation nor notifies, three 502s
// in a row do; a new worker starts from the response it is given.
func TestSchedulerSuccessThreshold(t *testing.T) {
	srv := newScriptedServer(t, 502)
	s, fc, notified := startFakeScheduler(t, func(time.Duration) time.Duration { return 0 })
	spec := Spec{Request: Request{Method: "GET", URL: srv.URL, Timeout: time.Second}, Interval: time.Second, FailureThreshold: 3, SuccessThreshold: 3}
	ok := Response{StatusCode: "200", Body: "code 200"}
	// A restarted manager: the status says 200, the first probe gets 502.
	s.Ensure("ns/a", spec, ok)

	probeOnce := func(code int32) {
		t.Helper()
		srv.code.Store(code)
		before := srv.hits.Load()
		waitWaiters(t, fc, 1)
		fc.Step(time.Second)
		deadline := time.Now().Add(5 * time.Second)
		for srv.hits.Load() == before {
			if time.Now().After(deadline) {
				t.Fatal("no probe within 5s of a tick")
			}
			time.Sleep(time.Millisecond)
		}
		// The worker records what it got right after: give it the time
		// to, so that a check of an unchanged observation means something.
		time.Sleep(20 * time.Millisecond)
	}
	observed := func() Observation { obs, _ := s.Observation("ns/a"); return obs }
	recorded := func(want Observation) {
		t.Helper()
		waitFor(t, s, notified, "ns/a", func(o Observation) bool { return o == want })
		for len(notified) > 0 {
			<-notified
		}
	}

	// The first probe runs at once (no jitter).
	probeOnce(502)
	if obs := observed(); obs.Probed {
		t.Fatalf("a 502 against the status's 200 was recorded at the first probe: %+v", obs)
	}
	probeOnce(200) // the status's own response: recorded at once
	recorded(Observation{Probed: true, Response: ok})
	for i, code := range []int32{502, 200, 200, 502, 200, 502, 502} {
		probeOnce(code)
		if obs := observed(); obs != (Observation{Probed: true, Response: ok}) {
			t.Fatalf("probe %d (%d): observation %+v, want the 200 kept", i+1, code, obs)
		}
	}
	if n := len(notified); n != 0 {
		t.Errorf("%d notifications while the response stayed 200, want none", n)
	}
	probeOnce(502) // the third 502 in a row
	recorded(Observation{Probed: true, Response: Response{StatusCode: "502", Body: "code 502"}})
}

func TestPacedPause(t *testing.T) {
	half := func(d time.Duration) time.Duration { return d / 2 }
	for _, tt := range []struct {
		name     string
		used     usage
		interval time.Duration
		want     time.Duration
	}{
		{"no expression read nothing", usage{}, time.Second, 0},
		{"an answer read within the interval", usage{bytes: 10 << 10}, time.Second, 0},
		{"64 KiB in a second", usage{bytes: ExpressionBytesPerSecond}, time.Second, 0},
		{"256 KiB at 1s: 4s and the random part", usage{bytes: 4 * ExpressionBytesPerSecond}, time.Second, 6 * time.Second},
		{"1 MiB at 1s: 16s and the random part", usage{bytes: 1 << 20}, time.Second, 24 * time.Second},
		{"1 MiB at 30s: the interval is longer", usage{bytes: 1 << 20}, 30 * time.Second, 0},
		{"a quick evaluation of a small answer", usage{bytes: 1 << 10, evaluation: time.Millisecond}, time.Second, 0},
		{"a small answer evaluated for 100ms: 5s and the random part", usage{bytes: 32 << 10, evaluation: 100 * time.Millisecond}, time.Second, 7500 * time.Millisecond},
		{"the longer of bytes and time", usage{bytes: 1 << 20, evaluation: 100 * time.Millisecond}, time.Second, 24 * time.Second},
		{"100ms of evaluation at 10s: the interval is longer", usage{evaluation: 100 * time.Millisecond}, 10 * time.Second, 0},
	} {
		if got := pacedPause(tt.used, tt.interval, half); got != tt.want {
			t.Errorf("%s: pacedPause(%+v, %s) = %s, want %s", tt.name, tt.used, tt.interval, got, tt.want)
		}
	}
}

// TestSchedulerPacesLargeAnswers: a state whose body expression reads a
// 256 KiB answer is probed about every 4s although its interval is 1s, so
// that it reads ExpressionBytesPerSecond on average; the same answer
// without a body expression (only the first bytes of it are read) is
// probed at every tick.
func TestSchedulerPacesLargeAnswers(t *testing.T) {
	var withExpr, without atomic.Int32
	body := strings.Repeat("x", 4*ExpressionBytesPerSecond)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/expr" {
			withExpr.Add(1)
		} else {
			without.Add(1)
		}
		_, _ = fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	s, fc, _ := startFakeScheduler(t, func(time.Duration) time.Duration { return 0 })
	s.spread = func(time.Duration) time.Duration { return 0 }
	s.Ensure("ns/expr", Spec{Request: Request{Method: "GET", URL: srv.URL + "/expr", Timeout: time.Second, BodyExpression: "size(response.body)"},
		Interval: time.Second, FailureThreshold: 1}, Response{})
	s.Ensure("ns/plain", Spec{Request: Request{Method: "GET", URL: srv.URL + "/plain", Timeout: time.Second}, Interval: time.Second, FailureThreshold: 1}, Response{})
	waitWaiters(t, fc, 2)
	for i := range 10 {
		fc.Step(time.Second)
		// The plain state probes at every step (the first ends the start
		// delay): once it has, the step has reached both workers.
		waitCount(t, &without, int32(i+1))
		time.Sleep(20 * time.Millisecond)
	}
	// Probes at 1s to 10s: the paced state at 1s, 5s and 9s; a missed
	// tick on a loaded machine may shift one.
	if got := withExpr.Load(); got < 2 || got > 4 {
		t.Errorf("probes of the state reading 256 KiB with its expression: %d in 10 ticks, want about 3 (not one a tick)", got)
	}
}

// waitCount waits until c reaches at least n.
func waitCount(t *testing.T, c *atomic.Int32, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("count %d, want %d within 5s", c.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
