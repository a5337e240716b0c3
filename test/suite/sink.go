package suite

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Notification is one CloudEvent a Sink received.
type Notification struct {
	SpecVersion string          `json:"specversion"`
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Source      string          `json:"source"`
	Subject     string          `json:"subject"`
	Time        time.Time       `json:"time"`
	ContentType string          `json:"datacontenttype"`
	Data        json.RawMessage `json:"data"`
	// Text is a Slack message's text.
	Text string `json:"text"`
	// Header is the request's Content-Type; Authorization its header.
	Header, Authorization string
	// Answered is the status the sink answered.
	Answered int
}

// Sink is a notification sink on loopback: it records what it is sent to
// its URL, and answers each request with the status Answer picks (200 when
// nil). Its URL has a path of its own: a port freed by another test's sink
// is soon another's, and that test's notifiers, still retrying in the
// shared manager, must not be counted here; a request to any other path is
// answered 404 and not recorded.
type Sink struct {
	*httptest.Server

	path string

	mu       sync.Mutex
	requests []Notification
	// Answer picks the status of the nth request (from 0).
	Answer func(n int) int
}

// NewSink starts a Sink; it stops with the test's cleanup.
func NewSink(t interface{ Cleanup(func()) }) *Sink {
	s := &Sink{path: "/sink-" + rand.Text()}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL += s.path
	t.Cleanup(s.Close)
	return s
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.path {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var n Notification
	_ = json.Unmarshal(body, &n)
	n.Header = r.Header.Get("Content-Type")
	n.Authorization = r.Header.Get("Authorization")
	s.mu.Lock()
	defer s.mu.Unlock()
	n.Answered = http.StatusOK
	if s.Answer != nil {
		n.Answered = s.Answer(len(s.requests))
	}
	s.requests = append(s.requests, n)
	w.WriteHeader(n.Answered)
}

// SetAnswer sets Answer while the sink runs.
func (s *Sink) SetAnswer(f func(n int) int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Answer = f
}

// Requests are every request received, retries included.
func (s *Sink) Requests() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.requests...)
}

// Received are the notifications the sink took (answered 2xx), each id
// once, in the order of their first arrival, as a sink that deduplicates
// by id keeps them.
func (s *Sink) Received() []Notification {
	seen := map[string]bool{}
	var out []Notification
	for _, n := range s.Requests() {
		if n.Answered < 200 || n.Answered > 299 {
			continue
		}
		key := n.ID
		if key == "" {
			key = n.Text
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, n)
		}
	}
	return out
}

// Types are the types of Received, e.g. "io.dynamicingress.statechanged".
func (s *Sink) Types() []string {
	var out []string
	for _, n := range s.Received() {
		out = append(out, n.Type)
	}
	return out
}

// ServerPort is the port of a test server on loopback, as a Service's port
// names it.
func ServerPort(s *httptest.Server) int32 {
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		panic(err)
	}
	n, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		panic(err)
	}
	return int32(n)
}
