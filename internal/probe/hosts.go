package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// normalizeHost lower-cases a URL's host and drops one trailing dot, so
// that "Flags.Example.COM." and "flags.example.com" are the same host.
func normalizeHost(host string) string {
	h := strings.ToLower(strings.TrimSpace(host))
	if !strings.HasPrefix(h, "[") {
		h = strings.TrimSuffix(h, ".")
	}
	return h
}

// parseLiteralIP returns the address a normalized host denotes when it is
// a literal IP address in any form a resolver might accept: IPv6 with or
// without brackets, dotted decimal, and the inet_aton forms (2130706433,
// 0x7f000001, 0177.0.0.1, 127.1) that getaddrinfo turns into addresses
// without asking DNS.
func parseLiteralIP(host string) (netip.Addr, bool) {
	if inner, ok := strings.CutPrefix(host, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return netip.Addr{}, false
		}
		addr, err := netip.ParseAddr(inner)
		return addr, err == nil
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr, true
	}
	return parseInetAton(host)
}

// parseInetAton parses the forms inet_aton(3) accepts: one to four parts
// separated by dots, each decimal, octal (leading 0) or hex (leading 0x),
// the last part filling all the bytes that remain.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 0xff {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		// The last part fills the remaining 4-i bytes.
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseAtonPart parses one part of an inet_aton address.
func parseAtonPart(p string) (uint64, bool) {
	base, digits := 10, p
	switch {
	case strings.HasPrefix(p, "0x"):
		base, digits = 16, p[2:]
		if digits == "" {
			// inet_aton reads a bare "0x" as zero.
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	if digits == "" {
		return 0, false
	}
	// ParseUint with a fixed base takes neither signs nor underscores.
	n, err := strconv.ParseUint(digits, base, 32)
	return n, err == nil
}

// errHostHeaderForm is the refusal of a Host header value that is not a
// plain host with an optional port.
var errHostHeaderForm = errors.New("must be a host name or IP address with an optional port")

// hostOfHostHeader returns the host a Host header's value names, without
// its port: a DNS name of letters, digits, '-' and '_' (one trailing dot
// allowed), an IPv4 address, or an IPv6 address, bracketed when a port
// follows. Anything else is refused rather than guessed at.
func hostOfHostHeader(value string) (string, error) {
	host, port := value, ""
	switch {
	case strings.HasPrefix(value, "["):
		end := strings.IndexByte(value, ']')
		if end < 0 {
			return "", errHostHeaderForm
		}
		host, port = value[:end+1], value[end+1:]
		if _, err := netip.ParseAddr(host[1:end]); err != nil || (port != "" && port[0] != ':') {
			return "", errHostHeaderForm
		}
		port = strings.TrimPrefix(port, ":")
	case strings.Count(value, ":") > 1:
		// An IPv6 address without brackets, which cannot carry a port.
		if _, err := netip.ParseAddr(value); err != nil {
			return "", errHostHeaderForm
		}
		return value, nil
	case strings.Contains(value, ":"):
		host, port, _ = strings.Cut(value, ":")
	}
	if len(port) > 5 || strings.Trim(port, "0123456789") != "" {
		return "", errHostHeaderForm
	}
	if strings.HasPrefix(host, "[") {
		return host, nil
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			return "", errHostHeaderForm
		}
	}
	return host, nil
}

// hostPattern is one entry of the manager's --probe-allow-hosts.
type hostPattern struct {
	// addr is set for a literal IP pattern, which matches only that
	// address.
	addr netip.Addr
	// name is the whole name, or the part after "*." of a wildcard.
	name     string
	wildcard bool
}

// parseHostPattern parses "flags.example.com", "*.internal.example.com" or
// a literal IP address.
func parseHostPattern(entry string) (hostPattern, error) {
	h := normalizeHost(entry)
	if addr, ok := parseLiteralIP(h); ok {
		if bare := strings.Trim(h, "[]"); bare != addr.String() {
			return hostPattern{}, fmt.Errorf("invalid host pattern %q: write the address as %s", entry, addr)
		}
		return hostPattern{addr: addr.Unmap()}, nil
	}
	var p hostPattern
	labels := strings.Split(h, ".")
	if labels[0] == "*" {
		p.wildcard, labels = true, labels[1:]
		if len(labels) == 0 {
			return hostPattern{}, fmt.Errorf("invalid host pattern %q: a lone \"*\" would allow every host; leave the list empty for that", entry)
		}
	}
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return hostPattern{}, fmt.Errorf("invalid host pattern %q: %w", entry, err)
		}
	}
	p.name = strings.Join(labels, ".")
	return p, nil
}

// checkLabel accepts one DNS label of a pattern: letters, digits, '-' and
// '_' (seen in internal names), at most 63 bytes.
func checkLabel(l string) error {
	switch {
	case l == "":
		return errors.New("empty label")
	case strings.Contains(l, "*"):
		return errors.New(`"*" is only allowed as the whole first label, as in *.example.com`)
	case len(l) > 63:
		return fmt.Errorf("label %q is longer than 63 characters", l)
	}
	for _, c := range l {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return fmt.Errorf("invalid character %q", c)
		}
	}
	return nil
}

// matches reports whether a normalized host matches the pattern. A literal
// IP host (addr, isIP) matches only an IP pattern of the same address; a
// wildcard matches one or more labels below its name, not the name itself.
func (p hostPattern) matches(host string, addr netip.Addr, isIP bool) bool {
	if isIP || p.addr.IsValid() {
		return isIP && p.addr.IsValid() && p.addr == addr.Unmap()
	}
	if p.wildcard {
		return len(host) > len(p.name)+1 && strings.HasSuffix(host, "."+p.name)
	}
	return host == p.name
}
