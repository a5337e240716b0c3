package probe

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestProbeResponses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = fmt.Fprint(w, `{"status":"ok"}`)
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprint(w, "down")
		case "/redirect":
			w.Header().Set("Location", "/ok")
			w.WriteHeader(http.StatusFound)
			_, _ = fmt.Fprint(w, "moved")
		case "/long":
			_, _ = fmt.Fprint(w, strings.Repeat("x", 100))
		case "/exact":
			_, _ = fmt.Fprint(w, strings.Repeat("y", 16))
		case "/echo":
			_, _ = fmt.Fprintf(w, "%s %s accept=%s host=%s", r.Method, r.URL.Path, r.Header.Get("Accept"), r.Host)
		}
	}))
	defer srv.Close()
	p := NewProber(Guard{}, 16)

	tests := []struct {
		name string
		req  Request
		want Response
	}{
		{"200 with body", Request{Method: "GET", URL: srv.URL + "/ok"}, Response{StatusCode: "200", Body: `{"status":"ok"}`}},
		{"503 is an observation", Request{Method: "GET", URL: srv.URL + "/down"}, Response{StatusCode: "503", Body: "down"}},
		{"redirect not followed", Request{Method: "GET", URL: srv.URL + "/redirect"}, Response{StatusCode: "302", Body: "moved"}},
		{"body truncated at limit", Request{Method: "GET", URL: srv.URL + "/long"}, Response{StatusCode: "200", Body: strings.Repeat("x", 16), Truncated: true}},
		{"body exactly at limit", Request{Method: "GET", URL: srv.URL + "/exact"}, Response{StatusCode: "200", Body: strings.Repeat("y", 16)}},
		{"HEAD has no body", Request{Method: "HEAD", URL: srv.URL + "/ok"}, Response{StatusCode: "200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Probe(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("method and headers are sent", func(t *testing.T) {
		p := NewProber(Guard{}, 1024)
		got, err := p.Probe(context.Background(), Request{Method: "POST", URL: srv.URL + "/echo",
			Headers: []Header{{"Accept", "application/json"}, {"Host", "flags.example.com"}}})
		if err != nil {
			t.Fatal(err)
		}
		if want := "POST /echo accept=application/json host=flags.example.com"; got.Body != want {
			t.Errorf("server saw %q, want %q", got.Body, want)
		}
	})
}

func TestProbeFailures(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "ok") }))
	defer ok.Close()
	_, okPort, _ := net.SplitHostPort(strings.TrimPrefix(ok.URL, "http://"))
	closed := closedAddress(t)

	def, _ := ParseGuard(DefaultDenyCIDRs)
	tests := []struct {
		name    string
		guard   Guard
		req     Request
		wantErr string
	}{
		{"timeout", Guard{}, Request{Method: "GET", URL: slow.URL, Timeout: 100 * time.Millisecond}, "timed out after 100ms"},
		{"connection refused", Guard{}, Request{Method: "GET", URL: "http://" + closed}, "connection refused"},
		{"literal loopback denied", def, Request{Method: "GET", URL: ok.URL}, "probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"name resolving to loopback denied", def, Request{Method: "GET", URL: "http://localhost:" + okPort}, "is inside denied range"},
		{"mapped IPv6 loopback denied", def, Request{Method: "GET", URL: "http://[::ffff:127.0.0.1]:" + okPort}, "probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"unknown host", Guard{}, Request{Method: "GET", URL: "http://does-not-exist.invalid/"}, "does-not-exist.invalid"},
		{"TLS to a plain server", Guard{}, Request{Method: "GET", URL: strings.Replace(ok.URL, "http://", "https://", 1)}, "http: server gave HTTP response to HTTPS client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewProber(tt.guard, 1024).Probe(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Probe error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// closedAddress returns a loopback address where nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
