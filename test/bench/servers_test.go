package bench

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// probeInterval is the interval of every probed state of the bench.
const probeInterval = time.Second

// endpoint is a local HTTP endpoint for probed states that counts what
// reaches it: requests answered, or connections accepted when it fails.
type endpoint struct {
	URL   string
	mode  string
	count atomic.Int64
	close func()
}

func (e *endpoint) Close() { e.close() }

// Modes of endpoints: ok answers the same every time, timestamped answers
// the same value with a new timestamp every time, and each failure mode
// fails the same way every time.
const (
	modeOK          = "ok"
	modeTimestamped = "timestamped"
	modeReset       = "connection reset"
	modeHang        = "timeout"
	modeTLS         = "TLS error"
)

// timestampedValue is the value every timestamped answer carries, and
// timestampedBodyExpression reduces the answer to it (docs/behaviour.md,
// "What a probe records").
const (
	timestampedValue          = "0.02"
	timestampedBodyExpression = `size(response.json.data.result) == 0 ? "0" : response.json.data.result[0].value[1]`
)

// timestampedAnswer is a Prometheus HTTP API instant query answer: one
// sample of timestampedValue evaluated at now (seconds with milliseconds).
func timestampedAnswer(now time.Time) string {
	ms := now.UnixMilli()
	return fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d.%03d,%q]}]}}`,
		ms/1000, ms%1000, timestampedValue)
}

// startEndpoint serves on 127.0.0.1 in one mode:
//   - ok answers 200 {"ok": true};
//   - timestamped answers 200 with timestampedAnswer, like a Prometheus
//     instant query: a new evaluation time in every answer;
//   - connection reset reads the request and resets the connection;
//   - timeout reads the request and never answers (the probe times out);
//   - TLS error serves TLS with a certificate the manager does not trust.
func startEndpoint(mode string) (*endpoint, error) {
	e := &endpoint{mode: mode}
	switch mode {
	case modeOK:
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			e.count.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok": true}`)
		}))
		srv.Start()
		e.URL, e.close = srv.URL, srv.Close
	case modeTimestamped:
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			e.count.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, timestampedAnswer(time.Now()))
		}))
		srv.Start()
		e.URL, e.close = srv.URL, srv.Close
	case modeTLS:
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				e.count.Add(1)
			}
		}
		// The handshakes fail on purpose: do not log each one.
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		e.URL, e.close = srv.URL, srv.Close
	case modeReset, modeHang:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		var mu sync.Mutex
		conns := map[net.Conn]bool{}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				e.count.Add(1)
				mu.Lock()
				conns[c] = true
				mu.Unlock()
				go func() {
					defer func() { mu.Lock(); delete(conns, c); mu.Unlock() }()
					readRequestHead(c)
					if mode == modeReset {
						_ = c.(*net.TCPConn).SetLinger(0)
						_ = c.Close()
						return
					}
					// Hold the connection until the client gives up.
					_, _ = io.Copy(io.Discard, c)
					_ = c.Close()
				}()
			}
		}()
		e.URL = "http://" + l.Addr().String()
		e.close = func() {
			_ = l.Close()
			mu.Lock()
			for c := range conns {
				_ = c.Close()
			}
			mu.Unlock()
		}
	}
	return e, nil
}

// readRequestHead reads up to the blank line that ends the request head.
func readRequestHead(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil || line == "\r\n" || line == "\n" {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
}
