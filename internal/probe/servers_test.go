package probe

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testGuard allows loopback, where the test servers listen, and denies
// TEST-NET-1 like the controller's suite.
func testGuard(t *testing.T) Guard {
	return mustGuard(t, "192.0.2.0/24", "")
}

// clientPorts records the ephemeral ports the prober connected from: they
// change at every connection and must never appear in an error.
type clientPorts struct {
	mu    sync.Mutex
	ports []string
}

func (c *clientPorts) record(addr net.Addr) {
	_, port, _ := net.SplitHostPort(addr.String())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ports = append(c.ports, port)
}

func (c *clientPorts) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ports...)
}

// rawServer serves every connection on 127.0.0.1 with handle, which gets
// the request already read, for failures httptest cannot produce.
type rawServer struct {
	URL string
	clientPorts
}

func newRawServer(t *testing.T, handle func(c net.Conn)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{URL: "http://" + ln.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.record(c.RemoteAddr())
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					_ = c.Close()
					return
				}
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

// resetConn closes c with SO_LINGER 0, so the peer gets a TCP RST.
func resetConn(c net.Conn) {
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.Close()
}

// hold keeps c open and silent; the cleanup of the server closes it.
func hold(net.Conn) {}

// newExpiredTLSServer serves h over TLS with a self-signed certificate for
// 127.0.0.1 that expired in 2021, and returns the roots that trust it.
func newExpiredTLSServer(t *testing.T, h http.Handler) (*httptest.Server, *x509.CertPool, *clientPorts) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "expired.test"},
		NotBefore:             time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	var ports clientPorts
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.Config.ConnState = recordNew(&ports)
	srv.Config.ErrorLog = quietLog()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, roots, &ports
}

// newH2Server serves h over TLS with HTTP/2 and returns the roots that
// trust it.
func newH2Server(t *testing.T, h http.Handler) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = quietLog()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots
}

func recordNew(ports *clientPorts) func(net.Conn, http.ConnState) {
	return func(c net.Conn, state http.ConnState) {
		if state == http.StateNew {
			ports.record(c.RemoteAddr())
		}
	}
}

// stallProxy forwards TCP connections to a backend and can stall the
// established ones: they stay open but forward nothing more, the way a
// connection through a restarted load balancer or a dead NAT entry does,
// while new connections work.
type stallProxy struct {
	addr  string
	dials atomic.Int32

	mu   sync.Mutex
	live []*stallConn
}

type stallConn struct {
	client, server net.Conn
	stalled        atomic.Bool
}

func newStallProxy(t *testing.T, backend string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{addr: ln.Addr().String()}
	var (
		wg  sync.WaitGroup
		all []*stallConn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.dials.Add(1)
			s, err := net.Dial("tcp", backend)
			if err != nil {
				_ = c.Close()
				continue
			}
			sc := &stallConn{client: c, server: s}
			p.mu.Lock()
			p.live = append(p.live, sc)
			all = append(all, sc)
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); sc.pipe(s, c) }()
			go func() { defer wg.Done(); sc.pipe(c, s) }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, sc := range all {
			_ = sc.client.Close()
			_ = sc.server.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// pipe copies src to dst until either ends; once stalled, what it reads is
// dropped.
func (sc *stallConn) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !sc.stalled.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = sc.client.Close()
	_ = sc.server.Close()
}

// stall stops forwarding on every established connection.
func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, sc := range p.live {
		sc.stalled.Store(true)
	}
	p.live = nil
}

// countingListener counts the bytes the server wrote into its
// connections, that is what the client's kernel accepted.
type countingListener struct {
	net.Listener
	written *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// A small send buffer keeps what the kernel holds for the client, on
	// top of what the client read, small.
	_ = c.(*net.TCPConn).SetWriteBuffer(64 << 10)
	return countingConn{Conn: c, written: l.written}, nil
}

type countingConn struct {
	net.Conn
	written *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

// quietLog drops the server's complaints about the failures the tests
// provoke on purpose.
func quietLog() *log.Logger {
	return log.New(io.Discard, "", 0)
}
