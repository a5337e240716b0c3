package probe

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// DefaultDenyCIDRs is the default of the manager's --probe-deny-cidrs: the
// loopback, link-local and "this network" ranges.
const DefaultDenyCIDRs = "127.0.0.0/8,::1/128,169.254.0.0/16,fe80::/10,0.0.0.0/8"

// Guard refuses connections to addresses inside a set of denied prefixes.
// The zero Guard allows every address.
type Guard struct {
	denied []netip.Prefix
}

// ParseGuard builds a Guard from a comma-separated list of CIDRs. An empty
// list allows every address.
func ParseGuard(cidrs string) (Guard, error) {
	var g Guard
	for _, s := range strings.Split(cidrs, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Guard{}, fmt.Errorf("invalid CIDR %q: %w", s, err)
		}
		g.denied = append(g.denied, p.Masked())
	}
	return g, nil
}

// Denied returns the prefix that contains addr, if any. An IPv4-mapped IPv6
// address is checked as the IPv4 address it carries.
func (g Guard) Denied(addr netip.Addr) (netip.Prefix, bool) {
	addr = addr.Unmap().WithZone("")
	for _, p := range g.denied {
		if p.Contains(addr) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// CheckHost returns an error when host is a literal IP address inside a
// denied prefix. Names are not resolved: connections are checked when they
// are made.
func (g Guard) CheckHost(host string) error {
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return nil
	}
	if p, denied := g.Denied(addr); denied {
		return fmt.Errorf("address %s is inside denied range %s", addr.Unmap(), p)
	}
	return nil
}

// Control is a net.Dialer Control function: it runs after the name is
// resolved and before each connection, so it sees the real destination.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("probe guard: %w", err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("probe guard: unexpected address %q", host)
	}
	if p, denied := g.Denied(addr); denied {
		return fmt.Errorf("probe guard: address %s is inside denied range %s", addr.Unmap(), p)
	}
	return nil
}
