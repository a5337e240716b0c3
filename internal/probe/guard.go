package probe

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// DefaultDenyCIDRs is the default of the manager's --probe-deny-cidrs:
// loopback, "this network" and unspecified, link-local, and the cloud
// metadata addresses that live outside link-local (AWS over IPv6, Alibaba).
const DefaultDenyCIDRs = "127.0.0.0/8,::1/128,0.0.0.0/8,::/128,169.254.0.0/16,fe80::/10,fd00:ec2::254/128,100.100.100.200/32"

// Guard refuses connections to addresses inside a set of denied prefixes
// and, when it has an allow list, probes of hosts outside it. The zero
// Guard allows every host and address.
type Guard struct {
	denied []netip.Prefix
	allow  []hostPattern
}

// ParseGuard builds a Guard from the manager's --probe-deny-cidrs and
// --probe-allow-hosts, both comma-separated. An empty deny list allows
// every address; an empty allow list allows every host. Errors name the
// offending entry.
func ParseGuard(denyCIDRs, allowHosts string) (Guard, error) {
	var g Guard
	for _, s := range splitList(denyCIDRs) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return Guard{}, fmt.Errorf("invalid CIDR %q: %w", s, err)
		}
		g.denied = append(g.denied, p.Masked())
	}
	for _, s := range splitList(allowHosts) {
		p, err := parseHostPattern(s)
		if err != nil {
			return Guard{}, err
		}
		g.allow = append(g.allow, p)
	}
	return g, nil
}

// splitList returns the non-empty, trimmed entries of a comma-separated
// flag value.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Denied returns the prefix that denies addr, if any. An IPv6 address that
// carries an IPv4 address (IPv4-mapped, NAT64, 6to4) is also checked as
// that IPv4 address, since that is where the packets end up. An
// unspecified address (0.0.0.0, ::) is denied whenever loopback is, since
// connecting to it reaches the local host.
func (g Guard) Denied(addr netip.Addr) (netip.Prefix, bool) {
	v, denied := g.verdict(addr)
	return v.prefix, denied
}

// denial explains why an address is denied.
type denial struct {
	// addr is the address that was asked about, without zone; a mapped
	// IPv4 address is shown as plain IPv4.
	addr netip.Addr
	// carried is the IPv4 address a NAT64 or 6to4 addr carries, when that
	// is what the prefix contains.
	carried netip.Addr
	// asLoopback is set when addr is unspecified and denied as loopback.
	asLoopback bool
	prefix     netip.Prefix
	// written is how a URL's host spelled addr, when that is not its
	// usual form: "2130706433" alone would not tell why 127.0.0.0/8 applies.
	written string
}

func (d denial) String() string {
	s := "address " + d.addr.String()
	if d.written != "" {
		s += " (written " + d.written + ")"
	}
	switch {
	case d.carried.IsValid() && d.asLoopback:
		s += fmt.Sprintf(" (carrying %s, which reaches loopback)", d.carried)
	case d.carried.IsValid():
		s += fmt.Sprintf(" (carrying %s)", d.carried)
	case d.asLoopback:
		s += " (unspecified, which reaches loopback)"
	}
	return s + " is inside denied range " + d.prefix.String()
}

// loopbacks are the addresses an unspecified address reaches.
var loopbacks = []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}

// verdict checks addr and the IPv4 address it carries, if any.
func (g Guard) verdict(addr netip.Addr) (denial, bool) {
	addr = addr.WithZone("").Unmap()
	for _, a := range []netip.Addr{addr, carriedIPv4(addr)} {
		if !a.IsValid() {
			continue
		}
		if p, asLoopback, ok := g.denies(a); ok {
			d := denial{addr: addr, prefix: p, asLoopback: asLoopback}
			if a != addr {
				d.carried = a
			}
			return d, true
		}
	}
	return denial{}, false
}

// denies returns the prefix that contains a or, for an unspecified a, the
// prefix that denies loopback.
func (g Guard) denies(a netip.Addr) (p netip.Prefix, asLoopback, ok bool) {
	if p, ok := g.contains(a); ok {
		return p, false, true
	}
	if !a.IsUnspecified() {
		return netip.Prefix{}, false, false
	}
	for _, l := range loopbacks {
		if p, ok := g.contains(l); ok {
			return p, true, true
		}
	}
	return netip.Prefix{}, false, false
}

func (g Guard) contains(addr netip.Addr) (netip.Prefix, bool) {
	for _, p := range g.denied {
		if p.Contains(addr) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
	noAddr netip.Addr
)

// carriedIPv4 returns the IPv4 address that a NAT64 (RFC 6052 well-known
// prefix) or 6to4 (RFC 3056) address sends its packets to, or the invalid
// Addr. IPv4-mapped addresses are unmapped before this is called.
func carriedIPv4(addr netip.Addr) netip.Addr {
	b := addr.As16()
	switch {
	case !addr.Is6():
		return noAddr
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixTo4.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return noAddr
}

// CheckHost is the admission check of a URL's host: the allow list, then a
// literal IP address, in any form a resolver accepts, against the deny
// list. Names are not resolved: Control checks every connection.
func (g Guard) CheckHost(host string) error {
	if err := g.checkAllowed(host); err != nil {
		return fmt.Errorf("%w (the manager's --probe-allow-hosts)", err)
	}
	if err := g.checkLiteral(host); err != nil {
		return fmt.Errorf("%w (the manager's --probe-deny-cidrs)", err)
	}
	return nil
}

// CheckHostHeader is the check of a Host header in a probe's headers, at
// admission and by the prober: the host it names is held to the allow list
// exactly like a URL's host, whatever its case, trailing dot or port. A
// value that is not a plain host name or IP address with an optional port
// is refused, since net/http would send something other than what was
// checked (it cuts a Host value at a space or '/' and converts non-ASCII
// names to Punycode). An empty value stands for the URL's host. Without an
// allow list every value passes, as every URL host does. The error names
// the host: the prober must not show it, since header values never appear
// in a status.
func (g Guard) CheckHostHeader(value string) error {
	if len(g.allow) == 0 || value == "" {
		return nil
	}
	host, err := hostOfHostHeader(value)
	if err != nil {
		return fmt.Errorf("%w (a Host header is held to the manager's --probe-allow-hosts)", err)
	}
	if err := g.checkAllowed(host); err != nil {
		return fmt.Errorf("%w (the manager's --probe-allow-hosts)", err)
	}
	return nil
}

// checkAllowed returns an error when the guard has an allow list and host
// matches none of its patterns.
func (g Guard) checkAllowed(host string) error {
	if len(g.allow) == 0 {
		return nil
	}
	h := normalizeHost(host)
	addr, isIP := parseLiteralIP(h)
	for _, p := range g.allow {
		if p.matches(h, addr, isIP) {
			return nil
		}
	}
	return fmt.Errorf("host %s is not in the allowed hosts", h)
}

// checkLiteral returns an error when host is a literal IP address that is
// denied. Its wording matches Control's, without the "probe guard" prefix.
func (g Guard) checkLiteral(host string) error {
	h := normalizeHost(host)
	addr, ok := parseLiteralIP(h)
	if !ok {
		return nil
	}
	d, denied := g.verdict(addr)
	if !denied {
		return nil
	}
	if bare := strings.Trim(h, "[]"); bare != addr.String() && bare != d.addr.String() {
		d.written = h
	}
	return errors.New(d.String())
}

// Control is a net.Dialer Control function: it runs after the name is
// resolved and before each connection, so it sees the real destination.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &guardError{msg: err.Error()}
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return &guardError{msg: fmt.Sprintf("unexpected address %q", host)}
	}
	if d, denied := g.verdict(addr); denied {
		return &guardError{msg: d.String()}
	}
	return nil
}

// guardError is a refusal by the guard, so the prober can tell it from a
// network failure.
type guardError struct{ msg string }

func (e *guardError) Error() string { return "probe guard: " + e.msg }
