package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/http2"
)

// FailureReason says in one word why a probe got no HTTP response, so that
// callers can count failures by kind.
type FailureReason string

// The reasons a probe fails.
const (
	// ReasonDNS: the host name could not be resolved.
	ReasonDNS FailureReason = "dns"
	// ReasonConnect: the connection was refused, unreachable, or the dial
	// failed otherwise.
	ReasonConnect FailureReason = "connect"
	// ReasonTLS: the TLS handshake failed, certificate checks included.
	ReasonTLS FailureReason = "tls"
	// ReasonTimeout: the probe's deadline passed, in whatever phase.
	ReasonTimeout FailureReason = "timeout"
	// ReasonDenied: the address guard or the host allow list refused.
	ReasonDenied FailureReason = "denied"
	// ReasonHTTP: the peer answered something that is not HTTP or that
	// the prober refuses (response headers over MaxResponseHeaderBytes),
	// or the request itself could not be made.
	ReasonHTTP FailureReason = "http"
	// ReasonRead: the connection broke after the request was sent, or
	// while the body was read.
	ReasonRead FailureReason = "read"
	// ReasonExpression: the response came, but the request's body
	// expression could not reduce it (a key missing from this answer).
	ReasonExpression FailureReason = "expression"
	// ReasonSecret: a header's value could not be read from its Secret
	// (the Secret or its key is missing, or cannot be read).
	ReasonSecret FailureReason = "secret"
)

// Error is a probe that got no HTTP response. Message names the method and
// the redacted URL and reads byte for byte the same at every attempt that
// fails the same way: the operator writes it into a status condition and
// must not write again when nothing changed. It holds no header value, no
// query string or userinfo, no ephemeral port and no current time.
type Error struct {
	Reason  FailureReason
	Message string
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// RedactURL returns raw without its userinfo, query string and fragment,
// which may hold tokens, so that it can be shown in messages, events and
// logs.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redactUnparsed(raw)
	}
	u.User = nil
	u.RawQuery, u.ForceQuery = "", false
	u.Fragment, u.RawFragment = "", ""
	if u.Host == "" {
		// Not a URL with a host, so url.Parse found no userinfo: without
		// its scheme, "user:pw@host/x" parses as scheme "user".
		return cutUserinfo(u.String())
	}
	return u.String()
}

// cutUserinfo drops what precedes the last @ of a string that is no URL
// with a host, where it may be userinfo.
func cutUserinfo(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// redactUnparsed is RedactURL's best effort for a string url.Parse
// rejects: it cuts the query and fragment, then the userinfo.
func redactUnparsed(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return cutUserinfo(raw)
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	if path != "" || strings.Contains(rest, "/") {
		return scheme + "://" + authority + "/" + path
	}
	return scheme + "://" + authority
}

// failure builds the Errors of one probe.
type failure struct {
	// prefix is "METHOD redacted-URL".
	prefix  string
	timeout time.Duration
	// secrets are the header values, never to be shown.
	secrets []string
}

func newFailure(r Request) failure {
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	f := failure{prefix: method + " " + RedactURL(r.URL), timeout: r.Timeout}
	for _, h := range r.Headers {
		f.secrets = append(f.secrets, h.Value)
	}
	return f
}

func (f failure) errorf(reason FailureReason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: f.prefix + ": " + fmt.Sprintf(format, args...)}
}

// phase is where a failure happened as far as the prober knows it; the
// trace of the attempt tells more.
type phase int

const (
	// beforeResponse: no response header was received.
	beforeResponse phase = iota
	// readingBody: the response came, its body broke.
	readingBody
)

// classify turns the error of a probe into a stable Error. ctx is the
// probe's own context, so its deadline tells a timeout in any phase.
func (f failure) classify(ctx context.Context, t traceState, err error, ph phase) *Error {
	if e := f.classifyContext(ctx, err); e != nil {
		return e
	}
	var guard *guardError
	if errors.As(err, &guard) {
		return f.errorf(ReasonDenied, "%s", guard)
	}
	if ph == readingBody {
		return f.errorf(ReasonRead, "reading the body: %s", f.lowLevel(err))
	}
	if e := f.classifyHeaderLimit(t, err); e != nil {
		return e
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return f.errorf(ReasonDNS, "%s", describeDNS(dns))
	}
	if e := f.classifyTLS(t, err); e != nil {
		return e
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		if op.Timeout() {
			return f.errorf(ReasonTimeout, "could not connect within %s", dialTimeout)
		}
		return f.errorf(ReasonConnect, "%s", f.lowLevel(op.Err))
	}
	closed := isClosed(err)
	switch {
	case t.firstByte && !closed:
		return f.errorf(ReasonHTTP, "the server answered something that is not valid HTTP")
	case t.conn == nil && !closed:
		return f.errorf(ReasonConnect, "%s", f.lowLevel(err))
	}
	return f.errorf(ReasonRead, "%s before the response", f.lowLevel(err))
}

// classifyContext returns the Error of a probe whose context ended, or nil.
// The configured timeout is named, not the elapsed time, which differs at
// every attempt.
func (f failure) classifyContext(ctx context.Context, err error) *Error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && f.timeout > 0:
		return f.errorf(ReasonTimeout, "timed out after %s", f.timeout)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return f.errorf(ReasonTimeout, "timed out")
	case ctx.Err() != nil:
		// The caller gave up (the scheduler stopping): no reason fits
		// better, and nobody stores this one.
		return f.errorf(ReasonTimeout, "canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return f.errorf(ReasonTimeout, "timed out")
	}
	return nil
}

// classifyHeaderLimit returns the Error of a response whose header block
// went over MaxResponseHeaderBytes, or nil. net/http exports no error for
// it, so its texts are matched; the prober's tests provoke each of them.
// HTTP/1 and HTTP/2 say so when the limit is passed in the last frame of
// the block; HTTP/2 drops the whole connection with a bare PROTOCOL_ERROR
// when more frames follow, which a malformed frame causes too, so that
// message names both.
func (f failure) classifyHeaderLimit(t traceState, err error) *Error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "server response headers exceeded"),
		strings.Contains(msg, "response header list larger than advertised limit"):
		return f.errorf(ReasonHTTP, "response headers exceed %d KiB", MaxResponseHeaderBytes>>10)
	case !t.firstByte && strings.HasSuffix(msg, "connection error: PROTOCOL_ERROR"):
		return f.errorf(ReasonHTTP, "HTTP/2 protocol error before the response: its headers exceed %d KiB, or a frame was malformed", MaxResponseHeaderBytes>>10)
	}
	return nil
}

// classifyTLS returns the Error of a failed TLS handshake, or nil.
func (f failure) classifyTLS(t traceState, err error) *Error {
	if errors.Is(err, http.ErrSchemeMismatch) {
		return f.errorf(ReasonTLS, "TLS handshake failed: the server answered plain HTTP")
	}
	hs := t.tlsErr
	if hs == nil && isTLSError(err) {
		hs = err
	}
	if hs == nil {
		return nil
	}
	var ne net.Error
	if errors.As(hs, &ne) && ne.Timeout() {
		return f.errorf(ReasonTimeout, "TLS handshake timed out after %s", tlsHandshakeTimeout)
	}
	return f.errorf(ReasonTLS, "TLS handshake failed: %s", f.describeTLS(hs))
}

// isTLSError reports whether err comes from the TLS handshake, for when
// the trace did not see it.
func isTLSError(err error) bool {
	var (
		cve *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
		ae  tls.AlertError
		ech *tls.ECHRejectionError
	)
	return errors.As(err, &cve) || errors.As(err, &rhe) || errors.As(err, &ae) || errors.As(err, &ech)
}

func (f failure) describeTLS(err error) string {
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) {
		return describeCertError(cve.Err, time.Now())
	}
	var rhe tls.RecordHeaderError
	if errors.As(err, &rhe) {
		return "the server does not speak TLS"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		// A TLS alert from the server: "tls: handshake failure" and the
		// like, with no address.
		return "the server refused: " + op.Err.Error()
	}
	return f.lowLevel(err)
}

// describeCertError describes why a certificate was not accepted. Go's
// expiry message carries the current time, which would change the text at
// every attempt: it is rewritten to name the certificate's own dates.
func describeCertError(err error, now time.Time) string {
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) && inv.Reason == x509.Expired && inv.Cert != nil {
		c := inv.Cert
		name := c.Subject.CommonName
		if name == "" {
			name = c.Subject.String()
		}
		if now.Before(c.NotBefore) {
			return fmt.Sprintf("certificate %q is not valid before %s", name, c.NotBefore.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("certificate %q expired at %s", name, c.NotAfter.UTC().Format(time.RFC3339))
	}
	if err == nil {
		return "certificate not accepted"
	}
	return err.Error()
}

// describeDNS describes a failed lookup without the DNS server's address.
func describeDNS(e *net.DNSError) string {
	switch {
	case e.IsNotFound:
		return fmt.Sprintf("cannot resolve host %s: no such host", e.Name)
	case e.IsTimeout:
		return fmt.Sprintf("cannot resolve host %s: the DNS server did not answer in time", e.Name)
	}
	return fmt.Sprintf("cannot resolve host %s: %s", e.Name, scrubAddresses(e.Err))
}

// isClosed reports whether err says the peer closed or reset the
// connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// lowLevel describes a network error without the addresses and ports that
// net.OpError carries: the local port changes at every connection.
func (f failure) lowLevel(err error) string {
	var (
		errno syscall.Errno
		se    http2.StreamError
	)
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	case errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &se):
		// The stream ID grows on a connection: leave it out.
		return fmt.Sprintf("HTTP/2 stream reset (%s)", se.Code)
	}
	return f.fallback(err)
}

// fallback is the text of an error no case above knows: without the
// url.Error wrapping (it quotes the whole URL), addresses with ports,
// HTTP/2 stream numbers or header values.
func (f failure) fallback(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	s := scrubAddresses(err.Error())
	for _, v := range f.secrets {
		// Short values would hit unrelated text; Go's own errors name
		// header keys, never values, so this is a last resort.
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

var (
	// localRemote is net.OpError's "local->remote": keep the remote.
	localRemote = regexp.MustCompile(`\S+->(\S+)`)
	// hostPort is an IPv4 or bracketed IPv6 address with a port.
	hostPort = regexp.MustCompile(`(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.%\w]+\]):\d+`)
	// streamNumbers are HTTP/2 stream IDs, which grow on a connection.
	streamNumbers = regexp.MustCompile(`(stream ID \d+; ?|LastStreamID=\d+, ?)`)
)

// scrubAddresses removes from an error text what changes between
// attempts: local addresses, ports and HTTP/2 stream numbers.
func scrubAddresses(s string) string {
	s = localRemote.ReplaceAllString(s, "$1")
	s = hostPort.ReplaceAllString(s, "$1")
	return streamNumbers.ReplaceAllString(s, "")
}
