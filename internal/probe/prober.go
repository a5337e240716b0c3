// Package probe sends the HTTP probes of DynamicIngressStates and schedules
// them, each state on its own interval. It has no Kubernetes types.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header is one request header.
type Header struct {
	Name, Value string
}

// Request is one probe to send.
type Request struct {
	Method  string
	URL     string
	Headers []Header
	Timeout time.Duration
}

// Response is what a probe observed: any HTTP response, whatever its status.
type Response struct {
	StatusCode string
	Body       string
	Truncated  bool
}

// Prober sends probes through a guarded HTTP client that never follows
// redirects and never uses a proxy.
type Prober struct {
	client       *http.Client
	maxBodyBytes int64
}

// NewProber returns a Prober that keeps at most maxBodyBytes of a body and
// refuses connections that guard denies.
func NewProber(guard Guard, maxBodyBytes int64) *Prober {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: guard.Control}
	transport := &http.Transport{
		// No proxy: a proxy would connect on our behalf, past the guard.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &Prober{
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		maxBodyBytes: maxBodyBytes,
	}
}

// Probe sends one request and returns the response, or the transport error.
func (p *Prober) Probe(ctx context.Context, r Request) (Response, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, nil)
	if err != nil {
		return Response{}, err
	}
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return Response{}, cleanError(err, r.Timeout)
	}
	defer func() { _ = resp.Body.Close() }()

	body, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBodyBytes+1))
	if err != nil {
		return Response{}, fmt.Errorf("reading body: %w", cleanError(err, r.Timeout))
	}
	out := Response{StatusCode: strconv.Itoa(resp.StatusCode)}
	if int64(len(body)) > p.maxBodyBytes {
		body = body[:p.maxBodyBytes]
		out.Truncated = true
	}
	out.Body = string(body)
	return out, nil
}

// cleanError makes a timeout read the same at every attempt, so an
// unchanged failure does not look like a new one.
func cleanError(err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s", timeout)
	}
	return err
}
