// Package probe sends the HTTP probes of DynamicIngressStates and schedules
// them, each state on its own interval; served checks and notifications
// send through it too. It has no Kubernetes types but the API's headers
// (HeadersOf).
package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/sync/semaphore"
	"k8s.io/utils/clock"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/fairshare"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
)

// Header is one request header: Value, or the value of a Secret's key
// read when the probe is sent.
type Header struct {
	Name, Value string
	// FromSecret, when set, names the Secret key whose value is sent
	// instead of Value.
	FromSecret *SecretKey
}

// SecretKey names one key of a Secret.
type SecretKey struct {
	Namespace, Name, Key string
}

// Secrets reads the values of Secret keys for probe headers, for a state
// probed every interval: a rotated value is to be used within one interval
// or 30s, whichever is longer, and a value longer than MaxSecretValueBytes
// is an error. Its errors say why in words that read the same at every
// attempt, and never hold a value.
type Secrets interface {
	SecretValue(ctx context.Context, key SecretKey, interval time.Duration) (string, error)
}

// Request is one probe to send.
type Request struct {
	Method  string
	URL     string
	Headers []Header
	Timeout time.Duration
	// BodyExpression, when set, reduces the response to what is recorded
	// as its body (see RecordBody).
	BodyExpression string
	// Tenant names whose share of the answers' memory a body expression's
	// answer takes (MaxAnswerBytesPerTenant): the state's namespace.
	Tenant string
	// Body, when set, is sent as the request's body with the Content-Type
	// ContentType: a notification posted to a sink.
	Body        []byte
	ContentType string
}

// MaxExpressionInput is the longest body a body expression reads: the
// whole body is needed to parse it as JSON, but only the expression's
// result is kept, within the Prober's maxBodyBytes.
const MaxExpressionInput = 1 << 20

// MaxConcurrentEvaluations is how many expressions the manager evaluates
// at once, body expressions and expected expressions together. An
// evaluation is CPU work of bounded memory (docs/install.md sizes it);
// with more waiting than slots, the slots go to the namespaces in turn
// (fairshare.Turns), and a probe waits for one within its own timeout, so
// a hundred states probing large answers every second hold a few
// evaluations' memory, not a hundred, and leave cores to the reconcilers.
const MaxConcurrentEvaluations = 2

// NamespaceEvaluationShare is the share of one core that the expressions
// of one namespace may take on average: a namespace whose expressions
// took 100ms begins its next evaluation 400ms after the first began, while
// other namespaces take their turns (docs/behaviour.md, "Fair shares").
const NamespaceEvaluationShare = 0.25

// NewEvaluationTurns returns the manager's evaluation slots, shared in
// turn between namespaces, each held to NamespaceEvaluationShare.
func NewEvaluationTurns() *fairshare.Turns {
	return fairshare.New(clock.RealClock{}, MaxConcurrentEvaluations, NamespaceEvaluationShare)
}

// Response is what a probe observed: any HTTP response, whatever its status.
type Response struct {
	StatusCode string
	// Body is valid UTF-8 of at most the Prober's maxBodyBytes.
	Body string
	// Truncated is true when the body was longer than maxBodyBytes.
	Truncated bool
}

// Prober sends probes through a guarded HTTP client that never follows
// redirects, never uses a proxy and never asks for compressed bodies.
type Prober struct {
	client       *http.Client
	guard        Guard
	maxBodyBytes int64
	// turns are the evaluation slots, shared with expected expressions.
	turns *fairshare.Turns
	// answers is the memory budget of the answers body expressions read
	// (MaxAnswerBytesHeld, MaxAnswerBytesPerTenant).
	answers *answerBudget
	// secrets reads the headers whose values live in Secrets; nil refuses
	// them.
	secrets Secrets
}

// WithEvaluationTurns makes p evaluate body expressions in turns taken
// from t, the slots the manager's expected expressions use too. Call it
// before the first probe.
func (p *Prober) WithEvaluationTurns(t *fairshare.Turns) *Prober {
	p.turns = t
	return p
}

// WithSecrets makes p read header values from Secrets through s. Call it
// before the first probe.
func (p *Prober) WithSecrets(s Secrets) *Prober {
	p.secrets = s
	return p
}

const (
	// dialTimeout and tlsHandshakeTimeout bound a probe without a timeout
	// of its own; a probe's timeout covers every phase.
	dialTimeout         = 30 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	// MaxResponseHeaderBytes bounds the header block of a response, status
	// line and 1xx responses included, instead of net/http's 10 MiB: a
	// few states probing an endpoint with huge headers must not exhaust
	// the manager's memory. HTTP/2 takes its header list limit from it.
	MaxResponseHeaderBytes = 64 << 10
)

// transportOptions are what tests change; NewProber uses
// defaultTransportOptions.
type transportOptions struct {
	// tlsConfig is nil for the system roots.
	tlsConfig *tls.Config
	// pingAfter is how long an HTTP/2 connection may stay silent before it
	// is pinged; pingTimeout how long the ping may go unanswered before the
	// connection is closed. Without them a pooled connection whose peer
	// vanished would take every probe to the timeout.
	pingAfter, pingTimeout time.Duration
}

var defaultTransportOptions = transportOptions{pingAfter: 15 * time.Second, pingTimeout: 5 * time.Second}

// NewProber returns a Prober that keeps at most maxBodyBytes of a body and
// refuses hosts and connections that guard denies.
func NewProber(guard Guard, maxBodyBytes int64) *Prober {
	return newProber(guard, maxBodyBytes, defaultTransportOptions)
}

func newProber(guard Guard, maxBodyBytes int64, o transportOptions) *Prober {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: guard.Control}
	transport := &http.Transport{
		// No proxy: a proxy would connect on our behalf, past the guard.
		Proxy:             nil,
		DialContext:       dialer.DialContext,
		TLSClientConfig:   o.tlsConfig,
		ForceAttemptHTTP2: true,
		HTTP2:             &http.HTTP2Config{SendPingTimeout: o.pingAfter, PingTimeout: o.pingTimeout},
		// Without this the transport asks for gzip and unpacks it, and a
		// user's own Accept-Encoding would get raw gzip stored as the body.
		DisableCompression:     true,
		MaxIdleConns:           1024,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	return &Prober{
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		guard:        guard,
		maxBodyBytes: maxBodyBytes,
		turns:        NewEvaluationTurns(),
		answers:      newAnswerBudget(),
	}
}

// ExpressionBytesPerSecond is how much answer, on average, one state's
// body expression may read per second: after a probe whose expression read
// n bytes, the state's next probe waits at least n / ExpressionBytesPerSecond
// (the Scheduler skips ticks of its interval until then). A 10 KiB answer
// is probed at every tick of a 1s interval; a 1 MiB one every 16s. It
// bounds the CPU a state can take from the others whatever its interval:
// decoding a megabyte of JSON takes milliseconds, and a hundred such states
// at 1s would take more than a core (docs/behaviour.md, "What a probe
// records").
const ExpressionBytesPerSecond = 64 << 10

// ExpressionTimeShare is the share of one core one state's body expression
// may take on average: after an evaluation that took d, the state's next
// probe waits at least d / ExpressionTimeShare. A small answer can be slow
// to evaluate (a loop over sixteen thousand numbers takes the whole
// EvaluationBudget), so bytes alone do not bound it: at 100ms the state is
// probed every 5s.
const ExpressionTimeShare = 0.02

// usage is what one probe's body expression took: the answer's bytes it
// read and the time its evaluation ran.
type usage struct {
	bytes      int64
	evaluation time.Duration
}

// Probe sends one request and returns the response, whatever its status.
// Every failure is an *Error. The timeout covers the whole probe, body
// included.
func (p *Prober) Probe(ctx context.Context, r Request) (Response, error) {
	resp, _, err := p.probe(ctx, r, 0)
	return resp, err
}

// probe is Probe for a state probed every interval, and what its body
// expression took (nothing without one).
func (p *Prober) probe(ctx context.Context, r Request, interval time.Duration) (Response, usage, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	f := newFailure(r)
	r, serr := p.withSecretValues(ctx, r, f, interval)
	if serr != nil {
		return Response{}, usage{}, serr
	}
	f = newFailure(r) // it hides the values read too
	var t trace
	req, ferr := p.newRequest(httptrace.WithClientTrace(ctx, t.clientTrace()), r, f)
	if ferr != nil {
		return Response{}, usage{}, ferr
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.dropOnTimeout(ctx)
		return Response{}, usage{}, f.classify(ctx, t.state(), err, beforeResponse)
	}
	defer func() { _ = resp.Body.Close() }()

	code := strconv.Itoa(resp.StatusCode)
	if r.BodyExpression == "" {
		// One byte past the limit tells a longer body from one that fits.
		raw, err := io.ReadAll(io.LimitReader(resp.Body, p.maxBodyBytes+1))
		if err != nil {
			t.dropOnTimeout(ctx)
			return Response{}, usage{}, f.classify(ctx, t.state(), err, readingBody)
		}
		out := Response{StatusCode: code}
		out.Body, out.Truncated = boundText(raw, p.maxBodyBytes)
		return out, usage{}, nil
	}

	limit := max(p.maxBodyBytes, MaxExpressionInput)
	lease := p.answers.lease(r.Tenant)
	defer lease.release()
	raw, err := readAnswer(ctx, lease, resp.Body, limit+1)
	used := usage{bytes: int64(len(raw))}
	switch {
	case errors.Is(err, errNoAnswerMemory):
		return Response{}, used, f.errorf(ReasonTimeout, "%s", noAnswerMemoryMessage(r.Tenant))
	case err != nil:
		t.dropOnTimeout(ctx)
		return Response{}, used, f.classify(ctx, t.state(), err, readingBody)
	}
	turn, err := p.turns.Acquire(ctx, r.Tenant)
	if err != nil {
		// Paced as if it had evaluated for a whole budget: a state whose
		// namespace has no turn to spare probes less often, rather than
		// reading an answer at every tick only to wait again.
		used.evaluation = match.EvaluationBudget
		return Response{}, used, f.errorf(ReasonTimeout, "timed out waiting for its turn at the manager's %d expression evaluations (shared in turn between namespaces, each namespace held to %d%% of a core)",
			MaxConcurrentEvaluations, int(NamespaceEvaluationShare*100))
	}
	began := time.Now()
	out, err := p.recordBody(r.BodyExpression, code, raw, limit, f)
	used.evaluation = time.Since(began)
	turn.Done()
	return out, used, err
}

// noAnswerMemoryMessage says that a probe of tenant ("" for a cluster
// state) found no room for its answer in time.
func noAnswerMemoryMessage(tenant string) string {
	if tenant == "" {
		return fmt.Sprintf("timed out waiting for memory to read the answer (cluster states' bodyExpressions hold at most %d MiB of answers at once)", ClusterAnswerReserve>>20)
	}
	return fmt.Sprintf("timed out waiting for memory to read the answer (the manager holds at most %d MiB of answers for one namespace's bodyExpressions at once, %d MiB for all namespaces)",
		MaxAnswerBytesPerTenant>>20, NamespaceAnswerPool>>20)
}

// MaxAnswerBytesHeld bounds the memory of the answers that body expressions
// read, whatever the number of states: an answer's buffer takes its bytes
// from this budget as they arrive (never from an announced Content-Length,
// which a stalling endpoint need not honour), and gives them back once the
// expression has been evaluated. A probe that cannot get them within its
// timeout fails (reason timeout). Answers of a few KiB take a few KiB of
// it.
const MaxAnswerBytesHeld = 32 << 20

// ClusterAnswerReserve is the part of MaxAnswerBytesHeld that only cluster
// states' probes take: the platform's kill switch reads its answer
// whatever the namespaces' states hold.
const ClusterAnswerReserve = 8 << 20

// NamespaceAnswerPool is the part of MaxAnswerBytesHeld that the states of
// every namespace share.
const NamespaceAnswerPool = MaxAnswerBytesHeld - ClusterAnswerReserve

// MaxAnswerBytesPerTenant is the share of NamespaceAnswerPool that the
// states of one namespace may hold at once: an eighth, room for two
// answers of 1 MiB, so that it takes more than seven namespaces whose
// states read large answers slowly, each holding its whole share, to make
// another namespace's body expressions wait (docs/behaviour.md, "Fair
// shares").
const MaxAnswerBytesPerTenant = NamespaceAnswerPool / 8

// answerChunk is the first share of the budget an answer takes.
const answerChunk = 32 << 10

// errNoAnswerMemory is readAnswer's error when the budget had no room
// within the probe's timeout.
var errNoAnswerMemory = errors.New("no memory in the answers' budget")

// answerBudget is the memory of the answers body expressions read: at most
// NamespaceAnswerPool for all namespaces, MaxAnswerBytesPerTenant for
// each, and ClusterAnswerReserve for cluster states (tenant ""). A
// namespace's share exists while one of its probes holds or waits for
// memory. Safe for concurrent use.
type answerBudget struct {
	namespaces *semaphore.Weighted
	cluster    *semaphore.Weighted

	mu      sync.Mutex
	tenants map[string]*tenantShare
}

// tenantShare is one tenant's part of the budget, and how many leases use
// it.
type tenantShare struct {
	sem    *semaphore.Weighted
	leases int
}

func newAnswerBudget() *answerBudget {
	return &answerBudget{namespaces: semaphore.NewWeighted(NamespaceAnswerPool), cluster: semaphore.NewWeighted(ClusterAnswerReserve),
		tenants: map[string]*tenantShare{}}
}

// lease opens a lease on the budget for one answer of tenant ("" for a
// cluster state); release it once the answer is no longer needed.
func (b *answerBudget) lease(tenant string) *answerLease {
	if tenant == "" {
		return &answerLease{budget: b, pool: b.cluster}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	share := b.tenants[tenant]
	if share == nil {
		share = &tenantShare{sem: semaphore.NewWeighted(MaxAnswerBytesPerTenant)}
		b.tenants[tenant] = share
	}
	share.leases++
	return &answerLease{budget: b, tenant: tenant, share: share, pool: b.namespaces}
}

// answerLease is the memory one answer holds: the same bytes from its
// namespace's share and from the namespaces' pool, or from the cluster
// states' reserve.
type answerLease struct {
	budget *answerBudget
	tenant string
	// share is nil for a cluster state's answer.
	share *tenantShare
	pool  *semaphore.Weighted
	held  int64
}

// grow takes n more bytes from the tenant's share and from its pool,
// waiting within ctx, or takes none.
func (l *answerLease) grow(ctx context.Context, n int64) error {
	if l.share != nil {
		if err := l.share.sem.Acquire(ctx, n); err != nil {
			return errNoAnswerMemory
		}
	}
	if err := l.pool.Acquire(ctx, n); err != nil {
		if l.share != nil {
			l.share.sem.Release(n)
		}
		return errNoAnswerMemory
	}
	l.held += n
	return nil
}

// release gives back what the lease holds, and forgets the tenant's share
// when no lease uses it any more.
func (l *answerLease) release() {
	l.pool.Release(l.held)
	if l.share == nil {
		l.held = 0
		return
	}
	l.share.sem.Release(l.held)
	l.held = 0
	l.budget.mu.Lock()
	defer l.budget.mu.Unlock()
	l.share.leases--
	if l.share.leases == 0 {
		delete(l.budget.tenants, l.tenant)
	}
}

// readAnswer reads at most n bytes of body for a body expression, taking
// the bytes of its buffer from lease as they arrive: the buffer starts at
// answerChunk and doubles only when it is full and more is to be read,
// whatever length the answer announced. It returns what it read; the lease
// holds the memory until it is released, also when reading fails.
func readAnswer(ctx context.Context, lease *answerLease, body io.Reader, n int64) ([]byte, error) {
	size := min(int64(answerChunk), n)
	if err := lease.grow(ctx, size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grown := min(2*int64(cap(buf)), n)
			if err := lease.grow(ctx, grown-int64(cap(buf))); err != nil {
				return buf, err
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		m, rerr := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if rerr == io.EOF {
			return buf, nil
		}
		if rerr != nil {
			return buf, rerr
		}
	}
	return buf, nil
}

// recordBody reduces a response to what its body expression yields, kept
// within maxBodyBytes (docs/behaviour.md, "What a probe records"). A body
// the expression cannot read whole, or an evaluation that fails, is a
// failure with reason expression whose message never holds the body.
func (p *Prober) recordBody(expr, code string, raw []byte, limit int64, f failure) (Response, error) {
	if int64(len(raw)) > limit {
		return Response{}, f.errorf(ReasonExpression, "the body is longer than %d bytes, the most a bodyExpression reads", limit)
	}
	text := strings.ToValidUTF8(string(raw), string(utf8.RuneError))
	body, err := match.RecordedBody(expr, match.Response{StatusCode: code, Body: text})
	if err != nil {
		msg := err.Error()
		if len(text) >= 4 {
			// A conversion error may quote what it converted; the body
			// itself is never shown.
			msg = strings.ReplaceAll(msg, text, "<body>")
		}
		return Response{}, f.errorf(ReasonExpression, "%s", msg)
	}
	out := Response{StatusCode: code}
	out.Body, out.Truncated = boundText([]byte(body), p.maxBodyBytes)
	return out, nil
}

// newRequest builds the HTTP request, or the Error that stops it before
// anything is sent.
func (p *Prober) newRequest(ctx context.Context, r Request, f failure) (*http.Request, *Error) {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, f.errorf(ReasonHTTP, "invalid URL: must be an absolute http or https URL with a host")
	}
	if err := p.guard.checkAllowed(u.Hostname()); err != nil {
		return nil, f.errorf(ReasonDenied, "probe guard: %s (the manager's --probe-allow-hosts)", err)
	}
	// A literal address in a form Go does not parse (2130706433) would go
	// to the resolver, which may or may not read it as an address: refuse
	// it here, in the same words as at dial time.
	if err := p.guard.checkLiteral(u.Hostname()); err != nil {
		return nil, f.errorf(ReasonDenied, "probe guard: %s", err)
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return nil, f.errorf(ReasonHTTP, "invalid request method %q", r.Method)
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	for _, h := range r.Headers {
		if !httpguts.ValidHeaderFieldName(h.Name) || !httpguts.ValidHeaderFieldValue(h.Value) {
			return nil, f.errorf(ReasonHTTP, "invalid header %q", h.Name)
		}
		if strings.EqualFold(h.Name, "Host") {
			// The Host header names the virtual host the request is for:
			// it is held to the allow list like the URL's host. The
			// message leaves the value out, like every header value.
			if p.guard.CheckHostHeader(h.Value) != nil {
				return nil, f.errorf(ReasonDenied, "probe guard: the Host header names a host that is not in the allowed hosts (the manager's --probe-allow-hosts)")
			}
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	// Set replaces a user's Accept-Encoding: a compressed body would be
	// stored as raw bytes, and the status shows what a client reads.
	req.Header.Set("Accept-Encoding", "identity")
	return req, nil
}

// MaxSecretValueBytes is the longest header value read from a Secret, the
// most a literal value may hold.
const MaxSecretValueBytes = 4096

// withSecretValues returns r with the value of every header that reads a
// Secret filled in. The headers are copied: r's are shared with the
// scheduler's spec.
func (p *Prober) withSecretValues(ctx context.Context, r Request, f failure, interval time.Duration) (Request, *Error) {
	if !slices.ContainsFunc(r.Headers, func(h Header) bool { return h.FromSecret != nil }) {
		return r, nil
	}
	headers := slices.Clone(r.Headers)
	for i, h := range headers {
		if h.FromSecret == nil {
			continue
		}
		value, ferr := p.secretValue(ctx, h, f, interval)
		if ferr != nil {
			return r, ferr
		}
		headers[i].Value = value
	}
	r.Headers = headers
	return r, nil
}

// secretValue reads a header's value from its Secret, or says why it
// cannot, naming the Secret and its key and never the value.
func (p *Prober) secretValue(ctx context.Context, h Header, f failure, interval time.Duration) (string, *Error) {
	ref := h.FromSecret
	where := fmt.Sprintf("header %q reads key %q of Secret %s/%s", h.Name, ref.Key, ref.Namespace, ref.Name)
	if p.secrets == nil {
		return "", f.errorf(ReasonSecret, "%s: this manager reads no Secrets", where)
	}
	value, err := p.secrets.SecretValue(ctx, *ref, interval)
	switch {
	case err != nil:
		return "", f.errorf(ReasonSecret, "%s: %s", where, err)
	case !httpguts.ValidHeaderFieldValue(value):
		return "", f.errorf(ReasonSecret, "%s: the value is not a valid header value (no line breaks or control characters; a file saved with a final newline has one)", where)
	}
	return value, nil
}

// trace follows one probe through net/http/httptrace: which connection it
// got, how a TLS handshake ended and whether any answer came, so that a
// failure can be told by the phase it happened in. Its hooks may run on
// the transport's goroutines.
type trace struct {
	mu sync.Mutex
	s  traceState
}

// traceState is what a trace saw.
type traceState struct {
	conn      net.Conn
	tlsErr    error
	firstByte bool
}

func (t *trace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.s.conn = info.Conn
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if err != nil {
				t.s.tlsErr = err
			}
		},
		GotFirstResponseByte: func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.s.firstByte = true
		},
	}
}

func (t *trace) state() traceState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s
}

// dropOnTimeout closes the probe's connection when its deadline passed.
// HTTP/1 does so itself, but HTTP/2 only resets the stream and keeps the
// connection pooled: if the connection is what hangs, every later probe
// would be sent over it and time out too, while a new one would work.
func (t *trace) dropOnTimeout(ctx context.Context) {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return
	}
	if c := t.state().conn; c != nil {
		_ = c.Close()
	}
}
