package controlplane

import (
	"io"
	"net"
	"sync"
	"time"
)

// Balancer plays a Service in front of several webhook servers: it accepts
// TCP connections on one address and passes each to the next backend that
// accepts a connection, so that the API server reaches whichever replica
// is still running. TLS passes through untouched.
type Balancer struct {
	listener net.Listener
	backends []string

	mu   sync.Mutex
	next int
	wg   sync.WaitGroup
}

// StartBalancer listens on addr and balances over backends (host:port).
func StartBalancer(addr string, backends ...string) (*Balancer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	b := &Balancer{listener: l, backends: backends}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

func (b *Balancer) serve() {
	defer b.wg.Done()
	for {
		conn, err := b.listener.Accept()
		if err != nil {
			return
		}
		go b.pass(conn)
	}
}

// pass connects conn to the first backend that answers, starting after
// the one the previous connection went to.
func (b *Balancer) pass(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	b.mu.Lock()
	start := b.next
	b.next = (b.next + 1) % len(b.backends)
	b.mu.Unlock()
	for i := range b.backends {
		backend, err := net.DialTimeout("tcp", b.backends[(start+i)%len(b.backends)], time.Second)
		if err != nil {
			continue
		}
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(backend, conn); done <- struct{}{} }()
		go func() { _, _ = io.Copy(conn, backend); done <- struct{}{} }()
		<-done
		_ = backend.Close()
		return
	}
}

// Close stops accepting connections; connections already passed end with
// their backend or client.
func (b *Balancer) Close() error {
	err := b.listener.Close()
	b.wg.Wait()
	return err
}
