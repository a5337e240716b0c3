package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/fairshare"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// promValue reads a Prometheus instant query's value without its
// evaluation timestamp; no sample (no traffic) reads "0".
const promValue = `size(response.json.data.result) == 0 ? "0" : response.json.data.result[0].value[1]`

// TestProbeBodyExpression probes a server shaped like the Prometheus HTTP
// API, whose every answer carries a new evaluation time: what a probe
// records is the expression's result, the same for answers that differ in
// the timestamp only.
func TestProbeBodyExpression(t *testing.T) {
	var at atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts := 1732400000 + at.Add(1)
		switch r.URL.Path {
		case "/api/v1/query":
			_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d.123,"0.02"]}]}}`, ts)
		case "/empty":
			_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		case "/error":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"token=s3cr3t is not a query"}`)
		case "/object":
			_, _ = fmt.Fprintf(w, `{"flag":{"on":true,"at":%d},"rev":7}`, ts)
		case "/huge":
			_, _ = fmt.Fprint(w, strings.Repeat(" ", MaxExpressionInput+1))
		}
	}))
	defer srv.Close()
	p := NewProber(Guard{}, 8)

	for i := range 3 {
		got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL + "/api/v1/query?query=x", BodyExpression: promValue})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(Response{StatusCode: "200", Body: "0.02"}, got); diff != "" {
			t.Errorf("answer %d (-want +got):\n%s", i, diff)
		}
	}
	got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL + "/empty", BodyExpression: promValue})
	if err != nil || got != (Response{StatusCode: "200", Body: "0"}) {
		t.Errorf("no sample: %+v, %v; want 200 with body 0", got, err)
	}
	// The result is held to the body limit like a whole body.
	got, err = p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL + "/object", BodyExpression: `response.json`})
	if err != nil || got != (Response{StatusCode: "200", Body: `{"flag":`, Truncated: true}) {
		t.Errorf("a result over the limit: %+v, %v; want its first 8 bytes, truncated", got, err)
	}
	got, err = p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL + "/object", BodyExpression: `response.json.rev`})
	if err != nil || got != (Response{StatusCode: "200", Body: "7"}) {
		t.Errorf("a number: %+v, %v; want 7", got, err)
	}

	for _, tt := range []struct {
		name, path, expr, want string
	}{
		{"an error answer without the key", "/error", promValue,
			"GET " + srv.URL + "/error: bodyExpression failed: no such key: data"},
		{"an unguarded empty result", "/empty", `response.json.data.result[0].value[1]`,
			"GET " + srv.URL + "/empty: bodyExpression failed: index out of bounds: 0"},
		{"a body longer than an expression reads", "/huge", promValue,
			fmt.Sprintf("GET %s/huge: the body is longer than %d bytes, the most a bodyExpression reads", srv.URL, MaxExpressionInput)},
		{"the body is never shown", "/error", `int(response.body) > 0`,
			"GET " + srv.URL + "/error: bodyExpression failed: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := probeError(t, p, Request{Method: "GET", URL: srv.URL + tt.path + "?token=x", BodyExpression: tt.expr})
			if e.Reason != ReasonExpression {
				t.Errorf("reason %q, want %q", e.Reason, ReasonExpression)
			}
			if !strings.HasPrefix(e.Message, tt.want) {
				t.Errorf("message %q, want it to start with %q", e.Message, tt.want)
			}
			if strings.Contains(e.Message, "s3cr3t") || strings.Contains(e.Message, "token=x") {
				t.Errorf("message %q shows the body or the query", e.Message)
			}
		})
	}
}

// TestAmplifyingBodyExpression probes a 1 MiB answer through the nest of
// maps that once turned it into gigabytes of JSON: the probe fails with
// reason expression, saying the result is too large, and never shows the
// body.
func TestAmplifyingBodyExpression(t *testing.T) {
	body := strings.Repeat("s3cr3t", (MaxExpressionInput-16)/6)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, body)
	}))
	defer srv.Close()
	expr := builders.NestedMaps(3, "response.body")
	e := probeError(t, NewProber(Guard{}, 10240), Request{Method: "GET", URL: srv.URL, BodyExpression: expr})
	want := "GET " + srv.URL + ": bodyExpression failed: the result is too large: it is longer than 1048576 bytes or holds more than 16384 values"
	if e.Reason != ReasonExpression || e.Message != want {
		t.Errorf("got %q (%s), want %q (expression)", e.Message, e.Reason, want)
	}
}

// TestEvaluationsWaitForASlot: with every evaluation slot taken, a probe
// with a body expression waits for one within its own timeout and then
// fails, reason timeout; a probe without one is not held up.
func TestEvaluationsWaitForASlot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, `{"v":1}`)
	}))
	defer srv.Close()
	p := NewProber(Guard{}, 10240)
	var held []*fairshare.Turn
	for range MaxConcurrentEvaluations {
		turn, err := p.turns.Acquire(context.Background(), "other")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, turn)
	}
	e := probeError(t, p, Request{Method: "GET", URL: srv.URL, Timeout: 200 * time.Millisecond, BodyExpression: "response.json.v", Tenant: "shop"})
	want := fmt.Sprintf("GET %s: timed out waiting for its turn at the manager's %d expression evaluations (shared in turn between namespaces, each namespace held to 25%% of a core)", srv.URL, MaxConcurrentEvaluations)
	if e.Reason != ReasonTimeout || e.Message != want {
		t.Errorf("got %q (%s), want %q (timeout)", e.Message, e.Reason, want)
	}
	// Paced as if it had evaluated for a whole budget: 5s at a 1s interval.
	_, used, _ := p.probe(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: 200 * time.Millisecond, BodyExpression: "response.json.v", Tenant: "shop"}, time.Second)
	if pause := pacedPause(used, time.Second, func(time.Duration) time.Duration { return 0 }); pause != 5*time.Second {
		t.Errorf("a probe that found no turn pauses its state %s, want 5s", pause)
	}
	if got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: time.Second}); err != nil || got.Body != `{"v":1}` {
		t.Errorf("a probe without a body expression: %+v, %v", got, err)
	}
	held[0].Done()
	if got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: time.Second, BodyExpression: "response.json.v"}); err != nil || got.Body != "1" {
		t.Errorf("with a slot free: %+v, %v; want body 1", got, err)
	}
}

// TestAnswersTakeMemoryFromABudget: with the answers' budget spent, a
// probe with a body expression waits for room within its timeout and then
// fails, reason timeout, without reading; once probes are done, the whole
// budget is free again, whatever they read.
func TestAnswersTakeMemoryFromABudget(t *testing.T) {
	srv := bigAnswerServer(t)
	p := NewProber(Guard{}, 10240)
	if !p.answers.namespaces.TryAcquire(NamespaceAnswerPool) {
		t.Fatal("the budget is not free at start")
	}
	e := probeError(t, p, Request{Method: "GET", URL: srv.URL, Timeout: 200 * time.Millisecond, BodyExpression: "response.json.v", Tenant: "shop"})
	if e.Reason != ReasonTimeout || e.Message != noAnswerMemory(srv.URL) {
		t.Errorf("got %q (%s), want %q (timeout)", e.Message, e.Reason, noAnswerMemory(srv.URL))
	}
	p.answers.namespaces.Release(NamespaceAnswerPool)
	for _, path := range []string{"/", "/chunked"} {
		if got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL + path, Timeout: time.Second, BodyExpression: "response.json.v", Tenant: "shop"}); err != nil || got.Body != "1" {
			t.Errorf("%s with room: %+v, %v; want body 1", path, got, err)
		}
	}
	if !p.answers.namespaces.TryAcquire(NamespaceAnswerPool) {
		t.Error("the budget is not whole again after the probes")
	}
	if n := len(p.answers.tenants); n != 0 {
		t.Errorf("%d tenants' shares are kept after their probes, want none", n)
	}
}

// TestOneTenantHoldsAShareOfTheAnswers: a namespace whose answers hold its
// whole share makes its own next probe wait, not another namespace's.
func TestOneTenantHoldsAShareOfTheAnswers(t *testing.T) {
	srv := bigAnswerServer(t)
	p := NewProber(Guard{}, 10240)
	slow := p.answers.lease("noisy")
	if err := slow.grow(context.Background(), MaxAnswerBytesPerTenant); err != nil {
		t.Fatal(err)
	}
	e := probeError(t, p, Request{Method: "GET", URL: srv.URL, Timeout: 200 * time.Millisecond, BodyExpression: "response.json.v", Tenant: "noisy"})
	if e.Reason != ReasonTimeout || e.Message != noAnswerMemory(srv.URL) {
		t.Errorf("the noisy namespace: got %q (%s), want %q (timeout)", e.Message, e.Reason, noAnswerMemory(srv.URL))
	}
	if got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: time.Second, BodyExpression: "response.json.v", Tenant: "quiet"}); err != nil || got.Body != "1" {
		t.Errorf("another namespace: %+v, %v; want body 1", got, err)
	}
	slow.release()
	if !p.answers.namespaces.TryAcquire(NamespaceAnswerPool) || len(p.answers.tenants) != 0 {
		t.Errorf("after the leases: the budget is not whole, or %d tenants' shares are kept", len(p.answers.tenants))
	}
}

// bigAnswerServer answers 600 KiB of JSON whose value v is 1, with a
// Content-Length, or without one at /chunked.
func bigAnswerServer(t *testing.T) *httptest.Server {
	big := strings.Repeat(" ", 600<<10) + `{"v":1}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush()
		}
		_, _ = fmt.Fprint(w, big)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// noAnswerMemory is the failure of a probe of url that found no room for
// its answer.
func noAnswerMemory(url string) string {
	return "GET " + url + ": timed out waiting for memory to read the answer (the manager holds at most 3 MiB of answers for one namespace's bodyExpressions at once, 24 MiB for all namespaces)"
}

// TestStallingAnswersOfFiveNamespaces: five namespaces, each with eight
// states whose endpoint announces 1 MiB and stalls (after nothing, or
// after most of it), hold no more than their shares: a sixth namespace's
// probe and a cluster state's read their answers meanwhile.
func TestStallingAnswersOfFiveNamespaces(t *testing.T) {
	stop := make(chan struct{})
	stalling := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(1<<20))
		w.WriteHeader(http.StatusOK)
		if r.URL.Path == "/most" {
			_, _ = w.Write([]byte(strings.Repeat(" ", 1<<20-1024)))
		}
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stalling.Close)
	t.Cleanup(func() { close(stop) })
	srv := bigAnswerServer(t)
	p := NewProber(Guard{}, 10240)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for ns := range 5 {
		for i := range 8 {
			path := []string{"/", "/most"}[i%2]
			go func() {
				_, _ = p.Probe(ctx, Request{Method: "GET", URL: stalling.URL + path, Timeout: 30 * time.Second,
					BodyExpression: "response.json.v", Tenant: fmt.Sprintf("noisy-%d", ns)})
			}()
		}
	}
	// Every stalling answer has begun and holds what it read.
	time.Sleep(time.Second)
	for _, tenant := range []string{"victim", ""} {
		got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: 2 * time.Second, BodyExpression: "response.json.v", Tenant: tenant})
		if err != nil || got.Body != "1" {
			t.Errorf("tenant %q beside five stalling namespaces: %+v, %v; want body 1", tenant, got, err)
		}
	}
}

// TestSlowExpressionsOfOneNamespace: twenty states of one namespace
// probing small answers through an expression that runs for its whole
// time budget do not make another namespace's probe wait for its turn
// past its timeout.
func TestSlowExpressionsOfOneNamespace(t *testing.T) {
	zeros := "[" + strings.TrimSuffix(strings.Repeat("0,", 16000), ",") + "]"
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, zeros)
	}))
	t.Cleanup(slow.Close)
	quick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, `{"v":1}`)
	}))
	t.Cleanup(quick.Close)
	p := NewProber(Guard{}, 10240)

	ctx, cancel := context.WithCancel(context.Background())
	var noisy sync.WaitGroup
	defer noisy.Wait()
	defer cancel()
	for range 20 {
		noisy.Go(func() {
			for ctx.Err() == nil {
				_, _ = p.Probe(ctx, Request{Method: "GET", URL: slow.URL, Timeout: 10 * time.Second,
					BodyExpression: "response.json.exists(x, x == 1)", Tenant: "noisy"})
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	for i := range 5 {
		got, err := p.Probe(context.Background(), Request{Method: "GET", URL: quick.URL, Timeout: 500 * time.Millisecond, BodyExpression: "response.json.v", Tenant: "victim"})
		if err != nil || got.Body != "1" {
			t.Errorf("probe %d of the victim namespace: %+v, %v; want body 1", i+1, got, err)
		}
	}
}
