package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
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
	s.Ensure("ns/a", spec)

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
	s.Ensure("ns/a", Spec{Request: Request{Method: "GET", URL: counted.URL, Timeout: time.Second}, Interval: 10 * time.Millisecond, FailureThreshold: 1})
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
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	fast := newFlagServer(t, 200)
	s, notified := startScheduler(t)
	s.Ensure("ns/slow", Spec{Request: Request{Method: "GET", URL: slow.URL, Timeout: time.Hour}, Interval: time.Hour, FailureThreshold: 1})
	s.Ensure("ns/fast", Spec{Request: Request{Method: "GET", URL: fast.URL, Timeout: time.Second}, Interval: 10 * time.Millisecond, FailureThreshold: 1})
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
	s.Ensure("ns/x", spec)
	waitFor(t, s, notified, "ns/x", func(o Observation) bool { return o.Response.StatusCode == "200" })

	s.Ensure("ns/x", spec) // same spec: keeps the observation
	if obs, _ := s.Observation("ns/x"); !obs.Probed {
		t.Errorf("Ensure with an unchanged spec reset the observation: %+v", obs)
	}
	spec.Request.URL = b.URL
	s.Ensure("ns/x", spec)
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
	s.Ensure("ns/early", Spec{Request: Request{Method: "GET", URL: srv.URL, Timeout: time.Second}, Interval: time.Second, FailureThreshold: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	waitFor(t, s, notified, "ns/early", func(o Observation) bool { return o.Response.StatusCode == "200" })
}
