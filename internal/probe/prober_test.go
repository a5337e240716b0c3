package probe

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
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
		case "/utf8-cut":
			_, _ = fmt.Fprint(w, strings.Repeat("a", 14)+"€€") // € is 3 bytes: the limit falls inside it
		case "/emoji-cut":
			_, _ = fmt.Fprint(w, strings.Repeat("a", 13)+"😀") // 4 bytes: the limit falls after 3 of them
		case "/invalid-utf8":
			_, _ = fmt.Fprint(w, "ok\xff\xfeok")
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
		{"truncated on a character boundary", Request{Method: "GET", URL: srv.URL + "/utf8-cut"}, Response{StatusCode: "200", Body: strings.Repeat("a", 14), Truncated: true}},
		{"4-byte character cut after 3 bytes", Request{Method: "GET", URL: srv.URL + "/emoji-cut"}, Response{StatusCode: "200", Body: strings.Repeat("a", 13), Truncated: true}},
		{"invalid UTF-8 replaced", Request{Method: "GET", URL: srv.URL + "/invalid-utf8"}, Response{StatusCode: "200", Body: "ok\uFFFDok"}},
		{"HEAD has no body", Request{Method: "HEAD", URL: srv.URL + "/ok"}, Response{StatusCode: "200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the same body reads the same every time
				got, err := p.Probe(context.Background(), tt.req)
				if err != nil {
					t.Fatalf("Probe: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Probe (-want +got):\n%s", diff)
				}
			}
		})
	}

	t.Run("method and headers are sent", func(t *testing.T) {
		p := NewProber(Guard{}, 1024)
		got, err := p.Probe(context.Background(), Request{Method: "POST", URL: srv.URL + "/echo",
			Headers: []Header{{Name: "Accept", Value: "application/json"}, {Name: "Host", Value: "flags.example.com"}}})
		if err != nil {
			t.Fatal(err)
		}
		if want := "POST /echo accept=application/json host=flags.example.com"; got.Body != want {
			t.Errorf("server saw %q, want %q", got.Body, want)
		}
	})
}

func TestProbeFlappingServer(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%2 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprint(w, "down")
			return
		}
		_, _ = fmt.Fprint(w, "up")
	}))
	defer srv.Close()
	p := newProber(testGuard(t), 1024, defaultTransportOptions)
	var got []Response
	for range 6 {
		resp, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp)
	}
	up, down := Response{StatusCode: "200", Body: "up"}, Response{StatusCode: "503", Body: "down"}
	if diff := cmp.Diff([]Response{up, down, up, down, up, down}, got); diff != "" {
		t.Errorf("each probe must report its own response (-want +got):\n%s", diff)
	}
}

// localhostPort returns the port of an httptest server.
func localhostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func TestProbeFailures(t *testing.T) {
	var hits atomic.Int32
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = fmt.Fprint(w, "ok")
	}))
	defer ok.Close()
	okPort := localhostPort(t, ok)
	closed := closedAddress(t)
	// A label longer than 63 bytes is no DNS name: the resolver says no
	// such host at once, without asking a server this sandbox lacks.
	noSuchHost := strings.Repeat("a", 64) + ".example.com"

	def := mustGuard(t, DefaultDenyCIDRs, "")
	loopback := mustGuard(t, "127.0.0.0/8,::1/128", "")
	allow := mustGuard(t, "192.0.2.0/24", "flags.example.com")
	tests := []struct {
		name       string
		guard      Guard
		req        Request
		wantReason FailureReason
		wantMsg    string // the whole message, or a part when wantPart
		wantPart   bool
	}{
		{name: "connection refused", guard: testGuard(t), req: Request{Method: "GET", URL: "http://" + closed + "/x"},
			wantReason: ReasonConnect, wantMsg: "GET http://" + closed + "/x: connection refused"},
		{name: "literal denied address", guard: testGuard(t), req: Request{Method: "GET", URL: "http://192.0.2.10/"},
			wantReason: ReasonDenied, wantMsg: "GET http://192.0.2.10/: probe guard: address 192.0.2.10 is inside denied range 192.0.2.0/24"},
		{name: "literal loopback denied", guard: def, req: Request{Method: "GET", URL: ok.URL},
			wantReason: ReasonDenied, wantMsg: "GET " + ok.URL + ": probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{name: "name resolving to loopback denied at dial time", guard: def, req: Request{Method: "GET", URL: "http://localhost:" + okPort + "/"},
			wantReason: ReasonDenied, wantMsg: "GET http://localhost:" + okPort + "/: probe guard: address ", wantPart: true},
		{name: "mapped IPv6 loopback denied", guard: def, req: Request{Method: "GET", URL: "http://[::ffff:127.0.0.1]:" + okPort},
			wantReason: ReasonDenied, wantMsg: "GET http://[::ffff:127.0.0.1]:" + okPort + ": probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{name: "decimal loopback denied", guard: def, req: Request{Method: "GET", URL: "http://2130706433:" + okPort + "/"},
			wantReason: ReasonDenied, wantMsg: "GET http://2130706433:" + okPort + "/: probe guard: address 127.0.0.1 (written 2130706433) is inside denied range 127.0.0.0/8"},
		{name: "v6 unspecified is loopback", guard: loopback, req: Request{Method: "GET", URL: "http://[::]:" + okPort + "/"},
			wantReason: ReasonDenied, wantMsg: "GET http://[::]:" + okPort + "/: probe guard: address :: (unspecified, which reaches loopback) is inside denied range 127.0.0.0/8"},
		{name: "v4 unspecified is loopback", guard: loopback, req: Request{Method: "GET", URL: "http://0.0.0.0:" + okPort + "/"},
			wantReason: ReasonDenied, wantMsg: "GET http://0.0.0.0:" + okPort + "/: probe guard: address 0.0.0.0 (unspecified, which reaches loopback) is inside denied range 127.0.0.0/8"},
		{name: "host not in the allow list", guard: allow, req: Request{Method: "GET", URL: ok.URL + "/x"},
			wantReason: ReasonDenied, wantMsg: "GET " + ok.URL + "/x: probe guard: host 127.0.0.1 is not in the allowed hosts (the manager's --probe-allow-hosts)"},
		{name: "unknown host", guard: testGuard(t), req: Request{Method: "GET", URL: "http://" + noSuchHost + "/"},
			wantReason: ReasonDNS, wantMsg: "GET http://" + noSuchHost + "/: cannot resolve host " + noSuchHost + ": no such host"},
		{name: "TLS to a plain server", guard: testGuard(t), req: Request{Method: "GET", URL: strings.Replace(ok.URL, "http://", "https://", 1)},
			wantReason: ReasonTLS, wantMsg: "GET " + strings.Replace(ok.URL, "http://", "https://", 1) + ": TLS handshake failed: the server answered plain HTTP"},
		{name: "not http", guard: testGuard(t), req: Request{Method: "GET", URL: "ftp://flags.example.com/x"},
			wantReason: ReasonHTTP, wantMsg: "GET ftp://flags.example.com/x: invalid URL: must be an absolute http or https URL with a host"},
		{name: "bad method", guard: testGuard(t), req: Request{Method: "GE T", URL: ok.URL},
			wantReason: ReasonHTTP, wantMsg: `GE T ` + ok.URL + `: invalid request method "GE T"`},
		{name: "bad header value", guard: testGuard(t), req: Request{Method: "GET", URL: ok.URL, Headers: []Header{{Name: "X-Token", Value: "a\nb"}}},
			wantReason: ReasonHTTP, wantMsg: "GET " + ok.URL + `: invalid header "X-Token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := probeError(t, newProber(tt.guard, 1024, defaultTransportOptions), tt.req)
			if e.Reason != tt.wantReason {
				t.Errorf("reason = %q, want %q (%s)", e.Reason, tt.wantReason, e)
			}
			if tt.wantPart {
				if !strings.HasPrefix(e.Message, tt.wantMsg) || !strings.Contains(e.Message, "is inside denied range") {
					t.Errorf("message = %q, want it to start with %q", e.Message, tt.wantMsg)
				}
			} else if diff := cmp.Diff(tt.wantMsg, e.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests from denied probes, want none", n)
	}
}

// TestProbeFailureMessagesAreStable checks that a failure reads byte for
// byte the same at every attempt, with no client port, address pair or
// current time: the message goes into a status condition.
func TestProbeFailureMessagesAreStable(t *testing.T) {
	reset := newRawServer(t, resetConn)
	hanging := newRawServer(t, hold)
	garbage := newRawServer(t, func(c net.Conn) {
		_, _ = fmt.Fprint(c, "SSH-2.0-OpenSSH_9.6\r\n")
		_ = c.Close()
	})
	expired, roots, expiredPorts := newExpiredTLSServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsOptions := defaultTransportOptions
	tlsOptions.tlsConfig = &tls.Config{RootCAs: roots}
	// HTTP/2 numbers the streams of a connection: 1, 3, 5...
	aborting, h2Roots := newH2Server(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	h2Options := defaultTransportOptions
	h2Options.tlsConfig = &tls.Config{RootCAs: h2Roots}

	tests := []struct {
		name       string
		url        string
		options    transportOptions
		ports      *clientPorts // nil when the probes share a connection
		wantReason FailureReason
		wantDetail string
	}{
		{"HTTP/2 stream reset", aborting.URL + "/flags", h2Options, nil, ReasonRead, "HTTP/2 stream reset (INTERNAL_ERROR) before the response"},
		{"reset after the request", reset.URL + "/flags", defaultTransportOptions, &reset.clientPorts, ReasonRead, "connection reset by the server before the response"},
		{"hanging server", hanging.URL + "/flags", defaultTransportOptions, &hanging.clientPorts, ReasonTimeout, "timed out after 200ms"},
		{"not HTTP", garbage.URL + "/flags", defaultTransportOptions, &garbage.clientPorts, ReasonHTTP, "the server answered something that is not valid HTTP"},
		{"expired certificate", expired.URL + "/flags", tlsOptions, expiredPorts, ReasonTLS, `TLS handshake failed: certificate "expired.test" expired at 2021-01-01T00:00:00Z`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each waits a second between its probes
			p := newProber(testGuard(t), 1024, tt.options)
			req := Request{Method: "GET", URL: tt.url, Timeout: 200 * time.Millisecond}
			first := probeError(t, p, req)
			// Apart in time, so that a message with the current time in
			// seconds would differ.
			time.Sleep(1100 * time.Millisecond)
			second := probeError(t, p, req)

			want := &Error{Reason: tt.wantReason, Message: "GET " + tt.url + ": " + tt.wantDetail}
			if diff := cmp.Diff(want, first); diff != "" {
				t.Errorf("first probe (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("the same failure read differently at the second probe (-first +second):\n%s", diff)
			}
			var ports []string
			if tt.ports != nil {
				if ports = tt.ports.list(); len(ports) < 2 {
					t.Fatalf("server saw %d connections, want one per probe", len(ports))
				}
			}
			for _, msg := range []string{first.Message, second.Message} {
				assertNothingEphemeral(t, msg, tt.url, ports)
			}
		})
	}
}

// assertNothingEphemeral fails when msg, past its URL, holds a client port,
// an address with a port, a local->remote pair or the current date.
func assertNothingEphemeral(t *testing.T, msg, url string, clientPorts []string) {
	t.Helper()
	rest := strings.Replace(msg, url, "URL", 1)
	for _, port := range clientPorts {
		if strings.Contains(rest, port) {
			t.Errorf("message %q holds the client port %s", msg, port)
		}
	}
	if addr := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+|->`).FindString(rest); addr != "" {
		t.Errorf("message %q holds %q", msg, addr)
	}
	if today := time.Now().UTC().Format("2006-01-02"); strings.Contains(msg, today) || strings.Contains(msg, "current time") {
		t.Errorf("message %q holds the current time", msg)
	}
}

func TestProbeRedactsSecrets(t *testing.T) {
	reset := newRawServer(t, resetConn)
	hanging := newRawServer(t, hold)
	garbage := newRawServer(t, func(c net.Conn) {
		_, _ = fmt.Fprint(c, "garbage\r\n")
		_ = c.Close()
	})
	expired, roots, _ := newExpiredTLSServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsOptions := defaultTransportOptions
	tlsOptions.tlsConfig = &tls.Config{RootCAs: roots}
	const secret = "?token=s3cr3t#frag-s3cr3t"
	headers := []Header{{Name: "Authorization", Value: "Bearer hdr-s3cr3t"}, {Name: "X-Api-Key", Value: "key-s3cr3t"}}

	withCredentials := func(base string) string {
		scheme, rest, _ := strings.Cut(base, "://")
		return scheme + "://user:pw@" + rest + "/path" + secret
	}
	tests := []struct {
		name    string
		url     string
		guard   Guard
		options transportOptions
		headers []Header
	}{
		{"refused", withCredentials("http://" + closedAddress(t)), testGuard(t), defaultTransportOptions, headers},
		{"reset", withCredentials(reset.URL), testGuard(t), defaultTransportOptions, headers},
		{"timeout", withCredentials(hanging.URL), testGuard(t), defaultTransportOptions, headers},
		{"not HTTP", withCredentials(garbage.URL), testGuard(t), defaultTransportOptions, headers},
		{"TLS", withCredentials(expired.URL), testGuard(t), tlsOptions, headers},
		{"DNS", withCredentials("http://" + strings.Repeat("b", 64) + ".example.com"), testGuard(t), defaultTransportOptions, headers},
		{"denied", withCredentials("http://192.0.2.10"), testGuard(t), defaultTransportOptions, headers},
		{"not allowed", withCredentials("http://127.0.0.1:1"), mustGuard(t, "", "flags.example.com"), defaultTransportOptions, headers},
		{"invalid header value", withCredentials(reset.URL), testGuard(t), defaultTransportOptions, []Header{{Name: "X-Api-Key", Value: "key-s3cr3t\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProber(tt.guard, 1024, tt.options)
			e := probeError(t, p, Request{Method: "GET", URL: tt.url, Headers: tt.headers, Timeout: 200 * time.Millisecond})
			for _, leak := range []string{"s3cr3t", "token", "frag", "user:pw", "pw@"} {
				if strings.Contains(e.Message, leak) {
					t.Errorf("message %q shows %q", e.Message, leak)
				}
			}
			if !strings.Contains(e.Message, "/path: ") {
				t.Errorf("message %q does not name the URL's path", e.Message)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"https://flags.example.com/api/v1/flags/killswitch", "https://flags.example.com/api/v1/flags/killswitch"},
		{"https://user:pw@flags.example.com/x?token=s3cr3t#frag", "https://flags.example.com/x"},
		{"https://user@flags.example.com:8443/x?", "https://flags.example.com:8443/x"},
		{"http://[::1]:8080/x?a=b", "http://[::1]:8080/x"},
		{"http://flags.example.com", "http://flags.example.com"},
		{"http://us%er:p@ss@flags.example.com/x?t=1", "http://flags.example.com/x"}, // url.Parse fails on %er
		{"http://user:pw@flags.example.com?t=\x7f", "http://flags.example.com"},
		{"not a url ?token=x", "not%20a%20url%20"},
		// Without a scheme or a host, what precedes an @ may be userinfo.
		{"user:s3cr3t@flags.example.com/x?token=s3cr3t", "flags.example.com/x"},
		{"s3cr3t@flags.example.com/x", "flags.example.com/x"},
		{"s3cr3t@flags.example.com/%zz", "flags.example.com/%zz"}, // url.Parse fails on %zz
		{"/api/v1/flags", "/api/v1/flags"},
		{"http:///x", "http:///x"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			if got := RedactURL(tt.raw); got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestProbeBoundsLargeBody(t *testing.T) {
	const total = 100 << 20
	var written atomic.Int64
	done := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		defer close(done)
		chunk := []byte(strings.Repeat("z", 32<<10))
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	srv.Listener = countingListener{Listener: srv.Listener, written: &written}
	srv.Start()
	defer srv.Close()

	const limit = 4096
	p := newProber(testGuard(t), limit, defaultTransportOptions)
	got, err := p.Probe(context.Background(), Request{Method: "GET", URL: srv.URL, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Response{StatusCode: "200", Body: strings.Repeat("z", limit), Truncated: true}, got); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still streams 10s after the probe returned: the connection was not closed")
	}
	// What the prober read, its buffers and the kernel's socket buffers:
	// a few MiB at most, far from the 100 MiB sent if it read everything.
	t.Logf("server wrote %d bytes", written.Load())
	if n := written.Load(); n > 16<<20 {
		t.Errorf("the server wrote %d MiB before the prober hung up, want at most 16 MiB", n>>20)
	}
}

func TestProbeSlowDripIsBoundedByTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}))
	defer srv.Close()
	p := newProber(testGuard(t), 1<<20, defaultTransportOptions)
	start := time.Now()
	e := probeError(t, p, Request{Method: "GET", URL: srv.URL, Timeout: 500 * time.Millisecond})
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("probe of a dripping body took %s, want about its 500ms timeout", elapsed)
	}
	want := &Error{Reason: ReasonTimeout, Message: "GET " + srv.URL + ": timed out after 500ms"}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
}

func TestProbeNeverAsksForCompression(t *testing.T) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		text := fmt.Sprintf("the server saw Accept-Encoding %q", r.Header.Values("Accept-Encoding"))
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = fmt.Fprint(w, text)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		_, _ = fmt.Fprint(gz, text)
		_ = gz.Close()
	})
	h1 := httptest.NewServer(handler)
	defer h1.Close()
	h2, roots := newH2Server(t, handler)
	h2Options := defaultTransportOptions
	h2Options.tlsConfig = &tls.Config{RootCAs: roots}

	tests := []struct {
		name    string
		url     string
		options transportOptions
		headers []Header
	}{
		{"HTTP/1.1", h1.URL, defaultTransportOptions, nil},
		{"HTTP/1.1, user asks for gzip", h1.URL, defaultTransportOptions, []Header{{Name: "Accept-Encoding", Value: "gzip"}}},
		{"HTTP/2", h2.URL, h2Options, nil},
		{"HTTP/2, user asks for gzip", h2.URL, h2Options, []Header{{Name: "accept-encoding", Value: "gzip, br"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProber(testGuard(t), 1024, tt.options)
			got, err := p.Probe(context.Background(), Request{Method: "GET", URL: tt.url, Headers: tt.headers, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			want := Response{StatusCode: "200", Body: `the server saw Accept-Encoding ["identity"]`}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProberTransport(t *testing.T) {
	tr := NewProber(Guard{}, 1).client.Transport.(*http.Transport)
	got := struct {
		Proxy, DisableCompression, HealthCheck bool
	}{tr.Proxy != nil, tr.DisableCompression, tr.HTTP2 != nil && tr.HTTP2.SendPingTimeout > 0 && tr.HTTP2.PingTimeout > 0}
	want := struct {
		Proxy, DisableCompression, HealthCheck bool
	}{Proxy: false, DisableCompression: true, HealthCheck: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transport settings (-want +got):\n%s", diff)
	}
}

// TestProbeReplacesStalledHTTP2Connection stalls an established HTTP/2
// connection while new ones work: the probe that times out on it must not
// leave it pooled for the next probe.
func TestProbeReplacesStalledHTTP2Connection(t *testing.T) {
	srv, roots := newH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, r.Proto)
	}))
	proxy := newStallProxy(t, srv.Listener.Addr().String())
	// No health check: this is about the timed-out probe alone.
	p := newProber(testGuard(t), 1024, transportOptions{tlsConfig: &tls.Config{RootCAs: roots}})
	req := Request{Method: "GET", URL: "https://" + proxy.addr + "/", Timeout: 300 * time.Millisecond}
	ok := Response{StatusCode: "200", Body: "HTTP/2.0"}

	got, err := p.Probe(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ok, got); diff != "" {
		t.Fatalf("first probe (-want +got):\n%s", diff)
	}
	proxy.stall()
	if _, err := p.Probe(context.Background(), req); err == nil {
		t.Fatal("probe over the stalled connection succeeded")
	}
	for i := range 3 { // the next intervals
		time.Sleep(100 * time.Millisecond)
		got, err := p.Probe(context.Background(), req)
		if err != nil {
			t.Fatalf("probe %d after the stall: %v", i+1, err)
		}
		if diff := cmp.Diff(ok, got); diff != "" {
			t.Errorf("probe %d after the stall (-want +got):\n%s", i+1, diff)
		}
	}
	if n := proxy.dials.Load(); n != 2 {
		t.Errorf("the proxy saw %d connections, want 2: the first and its replacement", n)
	}
}

// TestProbeHTTP2HealthCheck stalls an idle pooled HTTP/2 connection: the
// health check must find it dead before the next probe, which then
// succeeds at once over a new connection.
func TestProbeHTTP2HealthCheck(t *testing.T) {
	srv, roots := newH2Server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, r.Proto)
	}))
	proxy := newStallProxy(t, srv.Listener.Addr().String())
	p := newProber(testGuard(t), 1024, transportOptions{
		tlsConfig: &tls.Config{RootCAs: roots},
		pingAfter: 100 * time.Millisecond, pingTimeout: 100 * time.Millisecond,
	})
	req := Request{Method: "GET", URL: "https://" + proxy.addr + "/", Timeout: 2 * time.Second}
	if _, err := p.Probe(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	proxy.stall()
	time.Sleep(time.Second) // several ping rounds
	got, err := p.Probe(context.Background(), req)
	if err != nil {
		t.Fatalf("probe after the stall: %v", err)
	}
	if diff := cmp.Diff(Response{StatusCode: "200", Body: "HTTP/2.0"}, got); diff != "" {
		t.Errorf("probe after the stall (-want +got):\n%s", diff)
	}
	if n := proxy.dials.Load(); n != 2 {
		t.Errorf("the proxy saw %d connections, want 2", n)
	}
}

func TestBoundText(t *testing.T) {
	tests := []struct {
		name          string
		raw           string // what was read: at most limit+1 bytes
		limit         int64
		want          string
		wantTruncated bool
	}{
		{"fits", "hello", 10, "hello", false},
		{"exactly at the limit", "hello", 5, "hello", false},
		{"ASCII cut", "hello!", 5, "hello", true},
		{"cut inside a 2-byte character", "aé", 2, "a", true},
		{"cut inside a 3-byte character", "ab\xe2\x82", 3, "ab", true},
		{"cut inside a 4-byte character", "\xf0\x9f\x98\x80", 3, "", true},
		{"cut after a whole character", "é!", 2, "é", true},
		{"invalid byte replaced", "a\xffb", 10, "a\uFFFDb", false},
		{"invalid run replaced once", "a\xff\xfeb", 10, "a\uFFFDb", false},
		{"lone continuation bytes replaced", "a\x80\x80\x80\x80", 4, "a\uFFFD", true},
		{"invalid byte at the cut", "ab\xff\xff", 3, "ab", true},
		{"replacements grow past the limit", "\xffa\xffa", 4, "\uFFFDa", true},
		{"incomplete character at the end of a body that fits", "ab\xe2\x82", 5, "ab\uFFFD", false},
		{"zero limit", "x", 0, "", true},
		{"empty", "", 10, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the same input gives the same output
				got, truncated := boundText([]byte(tt.raw), tt.limit)
				if got != tt.want || truncated != tt.wantTruncated {
					t.Errorf("boundText(%q, %d) = %q, %v, want %q, %v", tt.raw, tt.limit, got, truncated, tt.want, tt.wantTruncated)
				}
			}
		})
	}
}

// probeError probes and returns the *Error it must fail with.
func probeError(t *testing.T, p *Prober, r Request) *Error {
	t.Helper()
	resp, err := p.Probe(context.Background(), r)
	if err == nil {
		t.Fatalf("Probe(%s) = %+v, want an error", r.URL, resp)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Probe(%s) error %v is a %T, want *probe.Error", r.URL, err, err)
	}
	return e
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

// TestFailureFallback covers the text of errors no case knows: it must
// still hold no header value, client port or HTTP/2 stream number.
func TestFailureFallback(t *testing.T) {
	f := newFailure(Request{URL: "http://flags.example.com/", Headers: []Header{{Name: "Authorization", Value: "Bearer hdr-s3cr3t"}, {Name: "X-Short", Value: "ab"}}})
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("odd: Bearer hdr-s3cr3t"), "odd: [redacted]"},
		{errors.New("write tcp 10.0.0.1:43123->10.0.0.2:443: odd"), "write tcp 10.0.0.2: odd"},
		{errors.New("dial tcp [2001:db8::1]:443: odd"), "dial tcp [2001:db8::1]: odd"},
		{errors.New("stream error: stream ID 7; PROTOCOL_ERROR"), "stream error: PROTOCOL_ERROR"},
		{errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=9, ErrCode=NO_ERROR, debug=""`), `http2: server sent GOAWAY and closed the connection; ErrCode=NO_ERROR, debug=""`},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if diff := cmp.Diff(tt.want, f.fallback(tt.err)); diff != "" {
				t.Errorf("fallback (-want +got):\n%s", diff)
			}
		})
	}
	got := describeCertError(x509.CertificateInvalidError{Reason: x509.Expired, Cert: &x509.Certificate{
		Subject:   pkix.Name{CommonName: "future.test"},
		NotBefore: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2101, 1, 1, 0, 0, 0, 0, time.UTC),
	}}, time.Now())
	if want := `certificate "future.test" is not valid before 2100-01-01T00:00:00Z`; got != want {
		t.Errorf("describeCertError of a certificate not yet valid = %q, want %q", got, want)
	}
}

// TestProbeHostHeaderHeldToAllowList: a Host header outside
// --probe-allow-hosts stops the probe before anything is sent, with a
// message that shows no header value; an allowed one, in any case and
// with a port, is sent.
func TestProbeHostHeaderHeldToAllowList(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = fmt.Fprintf(w, "host=%s", r.Host)
	}))
	defer srv.Close()
	p := newProber(mustGuard(t, "192.0.2.0/24", "127.0.0.1,flags.example.com"), 1024, defaultTransportOptions)
	const secret = "Bearer hdr-s3cr3t"
	denied := "GET " + srv.URL + ": probe guard: the Host header names a host that is not in the allowed hosts (the manager's --probe-allow-hosts)"

	tests := []struct {
		name     string
		host     string
		want     Response
		wantErr  *Error
		notShown string
	}{
		{name: "allowed, any case, with a port", host: "FLAGS.example.com:8443", want: Response{StatusCode: "200", Body: "host=FLAGS.example.com:8443"}},
		{name: "other virtual host", host: "admin.example.com", wantErr: &Error{Reason: ReasonDenied, Message: denied}, notShown: "admin.example.com"},
		{name: "other virtual host with a port", host: "Admin.Example.com:443", wantErr: &Error{Reason: ReasonDenied, Message: denied}, notShown: "dmin"},
		{name: "cut by net/http at a slash", host: "admin.example.com/flags.example.com", wantErr: &Error{Reason: ReasonDenied, Message: denied}, notShown: "admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			req := Request{Method: "GET", URL: srv.URL, Timeout: time.Second,
				Headers: []Header{{Name: "Authorization", Value: secret}, {Name: "Host", Value: tt.host}}}
			if tt.wantErr == nil {
				got, err := p.Probe(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Probe (-want +got):\n%s", diff)
				}
				return
			}
			e := probeError(t, p, req)
			if diff := cmp.Diff(tt.wantErr, e); diff != "" {
				t.Errorf("Probe error (-want +got):\n%s", diff)
			}
			for _, v := range []string{secret, tt.notShown} {
				if strings.Contains(e.Message, v) {
					t.Errorf("message %q shows the header value %q", e.Message, v)
				}
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the server got %d requests for a denied Host header, want none", n)
			}
		})
	}
}

// headersOf returns a handler whose response carries about size bytes of
// header values, in headers of 4000 bytes at most.
func headersOf(size int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i, left := 0, size; left > 0; i++ {
			n := min(left, 4000)
			w.Header().Set(fmt.Sprintf("X-Filler-%02d", i), strings.Repeat("h", n))
			left -= n
		}
		_, _ = fmt.Fprint(w, "ok")
	}
}

// TestProbeResponseHeaderLimit: a response header block over 64 KiB is a
// failure that says so, over HTTP/1.1 and HTTP/2; 60 KiB of headers work.
func TestProbeResponseHeaderLimit(t *testing.T) {
	const exceed = "response headers exceed 64 KiB"
	// HTTP/2 says exceed when the limit is passed in the last frame of the
	// header block, and drops the connection with a bare PROTOCOL_ERROR
	// when more frames follow: which one depends on how the server framed
	// and compressed its headers.
	h2Exceed := []string{exceed, "HTTP/2 protocol error before the response: its headers exceed 64 KiB, or a frame was malformed"}
	ok := Response{StatusCode: "200", Body: "ok"}
	tests := []struct {
		name    string
		size    int
		h2      bool
		wantErr []string // the messages after "GET <url>: " it may fail with; none for ok
	}{
		{"HTTP/1.1, 60 KiB", 60 << 10, false, nil},
		{"HTTP/1.1, 65 KiB", 65 << 10, false, []string{exceed}},
		{"HTTP/1.1, 1 MiB", 1 << 20, false, []string{exceed}},
		{"HTTP/2, 60 KiB", 60 << 10, true, nil},
		{"HTTP/2, 65 KiB", 65 << 10, true, h2Exceed},
		{"HTTP/2, 1 MiB", 1 << 20, true, h2Exceed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var url string
			options := defaultTransportOptions
			if tt.h2 {
				srv, roots := newH2Server(t, headersOf(tt.size))
				url, options.tlsConfig = srv.URL, &tls.Config{RootCAs: roots}
			} else {
				srv := httptest.NewServer(headersOf(tt.size))
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			p := newProber(testGuard(t), 1024, options)
			req := Request{Method: "GET", URL: url, Timeout: 5 * time.Second}
			if tt.wantErr == nil {
				got, err := p.Probe(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(ok, got); diff != "" {
					t.Errorf("Probe (-want +got):\n%s", diff)
				}
				return
			}
			var first string
			for i := range 2 { // the same every time
				e := probeError(t, p, req)
				if e.Reason != ReasonHTTP || !slices.Contains(tt.wantErr, strings.TrimPrefix(e.Message, "GET "+url+": ")) {
					t.Errorf("Probe error = %+v, want reason http and the URL with one of %q", e, tt.wantErr)
				}
				if i == 0 {
					first = e.Message
				} else if e.Message != first {
					t.Errorf("the second probe failed with %q, the first with %q", e.Message, first)
				}
			}
		})
	}
}

// TestProbeEndlessHeadersAreBounded: a server that sends headers forever
// is cut off after the limit, not after net/http's default of 10 MiB.
func TestProbeEndlessHeadersAreBounded(t *testing.T) {
	var written atomic.Int64
	srv := newRawServer(t, func(c net.Conn) {
		_ = c.(*net.TCPConn).SetWriteBuffer(64 << 10)
		line := []byte("X-Filler: " + strings.Repeat("h", 1000) + "\r\n")
		n, err := c.Write([]byte("HTTP/1.1 200 OK\r\n"))
		written.Add(int64(n))
		for err == nil && written.Load() < 100<<20 {
			n, err = c.Write(line)
			written.Add(int64(n))
		}
		_ = c.Close()
	})
	p := newProber(testGuard(t), 1024, defaultTransportOptions)
	e := probeError(t, p, Request{Method: "GET", URL: srv.URL, Timeout: 10 * time.Second})
	want := &Error{Reason: ReasonHTTP, Message: "GET " + srv.URL + ": response headers exceed 64 KiB"}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("Probe error (-want +got):\n%s", diff)
	}
	// What the prober read and the kernel's socket buffers: far from the
	// 10 MiB net/http reads by default.
	deadline := time.Now().Add(5 * time.Second)
	for last := int64(-1); written.Load() != last && time.Now().Before(deadline); {
		last = written.Load()
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("server wrote %d bytes", written.Load())
	if n := written.Load(); n > 4<<20 {
		t.Errorf("the server wrote %d KiB of headers before the prober hung up, want at most 4 MiB", n>>10)
	}
}
