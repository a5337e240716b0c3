package controlplane

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// PrometheusQueryPath is where a Prometheus serves instant queries.
const PrometheusQueryPath = "/api/v1/query"

// Prometheus stands in for the Prometheus HTTP API's instant query, for
// the demo and the tests of states with a bodyExpression: its answer is
// an instant vector whose one sample carries a new evaluation time at
// every answer and the value it is set to, an empty result for "" (no
// traffic), or Prometheus's error answer while failing.
type Prometheus struct {
	// URL is the query endpoint with a query, as a state probes it; Addr
	// is its host and port.
	URL, Addr string
	server    *http.Server

	mu      sync.Mutex
	value   string
	once    string
	failing bool
	clock   float64
}

// StartPrometheus serves on addr ("127.0.0.1:0" picks a free port),
// answering value until told otherwise.
func StartPrometheus(addr, value string) (*Prometheus, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the Prometheus stand-in needs %s: %w", addr, err)
	}
	p := &Prometheus{
		Addr:  l.Addr().String(),
		URL:   "http://" + l.Addr().String() + PrometheusQueryPath + "?query=errors:ratio_rate5m",
		value: value, clock: float64(time.Now().UnixMilli()) / 1000,
	}
	p.server = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

func (p *Prometheus) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path != PrometheusQueryPath || r.URL.Query().Get("query") == "" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"missing query"}`)
		return
	}
	p.clock += 1.017
	if p.failing {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:8: parse error"}`)
		return
	}
	value := p.value
	if p.once != "" {
		value, p.once = p.once, ""
	}
	if value == "" {
		_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		return
	}
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%.3f,%q]}]}}`, p.clock, value)
}

// Set changes the value of every answer from now on ("" for none).
func (p *Prometheus) Set(value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.value = value
}

// Once makes the next answer only carry value.
func (p *Prometheus) Once(value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.once = value
}

// Fail makes every answer Prometheus's error answer, or stops doing so.
func (p *Prometheus) Fail(failing bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing = failing
}

// Close stops serving.
func (p *Prometheus) Close() error { return p.server.Close() }
