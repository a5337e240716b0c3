package controlplane

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// StatusAPI is a small local HTTP endpoint that plays a status or
// feature-flag service for probed states. GET answers the current body
// with the current status code; PUT replaces the body.
type StatusAPI struct {
	// URL is the endpoint's address, http://<addr><path>.
	URL string

	server *http.Server
	mu     sync.Mutex
	code   int
	body   string
	// authorization, when set, is the Authorization header a request must
	// carry; others get 401.
	authorization string
}

// RequireAuthorization makes the endpoint answer 401 to a request whose
// Authorization header is not value.
func (s *StatusAPI) RequireAuthorization(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorization = value
}

// StartStatusAPI serves path on addr ("127.0.0.1:0" picks a free port).
func StartStatusAPI(addr, path, body string) (*StatusAPI, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the status API needs %s: %w", addr, err)
	}
	s := &StatusAPI{URL: "http://" + l.Addr().String() + path, code: http.StatusOK, body: body}
	s.server = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		if r.Method == http.MethodPut {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
			s.Set(http.StatusOK, string(body))
		}
		s.mu.Lock()
		code, body, authorization := s.code, s.body, s.authorization
		s.mu.Unlock()
		if authorization != "" && r.Header.Get("Authorization") != authorization {
			code, body = http.StatusUnauthorized, `{"error": "a bearer token is required"}`
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	})}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

// Set changes what the endpoint answers.
func (s *StatusAPI) Set(code int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.code, s.body = code, body
}

// Close stops serving: probes then fail to connect.
func (s *StatusAPI) Close() error { return s.server.Close() }
