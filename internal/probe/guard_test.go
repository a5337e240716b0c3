package probe

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseGuard(t *testing.T) {
	tests := []struct {
		name, deny, allow string
		wantErr           string
		denied, allowed   int
	}{
		{name: "default", deny: DefaultDenyCIDRs, denied: 8},
		{name: "empty", denied: 0},
		{name: "spaces and empty entries", deny: " 10.0.0.0/8 , ,192.168.0.0/16", denied: 2},
		{name: "host bits", deny: "10.0.0.1/8", denied: 1},
		{name: "not a CIDR", deny: "10.0.0.0", wantErr: `invalid CIDR "10.0.0.0"`},
		{name: "bad second CIDR", deny: "127.0.0.0/8,nope/3", wantErr: `invalid CIDR "nope/3"`},
		{name: "allow list", allow: "flags.example.com, *.internal.example.com,10.1.2.3,[2001:db8::1],2001:db8::2,Upper.Example.COM.", allowed: 6},
		{name: "empty label", allow: "flags..example.com", wantErr: `invalid host pattern "flags..example.com": empty label`},
		{name: "leading dot", allow: ".example.com", wantErr: `invalid host pattern ".example.com": empty label`},
		{name: "star inside", allow: "foo.*.com", wantErr: `invalid host pattern "foo.*.com": "*" is only allowed as the whole first label`},
		{name: "star in a label", allow: "*foo.example.com", wantErr: `invalid host pattern "*foo.example.com": "*" is only allowed as the whole first label`},
		{name: "star last", allow: "example.*", wantErr: `invalid host pattern "example.*"`},
		{name: "double star", allow: "*.*.example.com", wantErr: `invalid host pattern "*.*.example.com"`},
		{name: "lone star", allow: "*", wantErr: `invalid host pattern "*": a lone "*" would allow every host`},
		{name: "bad character", allow: "flags.example.com/x", wantErr: `invalid host pattern "flags.example.com/x": invalid character '/'`},
		{name: "port", allow: "flags.example.com:443", wantErr: `invalid host pattern "flags.example.com:443"`},
		{name: "inet_aton form", allow: "0x7f000001", wantErr: `invalid host pattern "0x7f000001": write the address as 127.0.0.1`},
		{name: "second entry named", allow: "ok.example.com,bad..example.com", wantErr: `"bad..example.com"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParseGuard(tt.deny, tt.allow)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseGuard(%q, %q) error = %v, want it to contain %q", tt.deny, tt.allow, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGuard(%q, %q): %v", tt.deny, tt.allow, err)
			}
			if len(g.denied) != tt.denied || len(g.allow) != tt.allowed {
				t.Errorf("ParseGuard(%q, %q) has %d prefixes and %d patterns, want %d and %d", tt.deny, tt.allow, len(g.denied), len(g.allow), tt.denied, tt.allowed)
			}
		})
	}
}

func TestGuardDenied(t *testing.T) {
	def := mustGuard(t, DefaultDenyCIDRs, "")
	loopbackOnly := mustGuard(t, "127.0.0.0/8,::1/128", "")
	v4LoopbackOnly := mustGuard(t, "127.0.0.0/8", "")
	noLoopback := mustGuard(t, "169.254.0.0/16", "")
	tests := []struct {
		name  string
		guard Guard
		addr  string
		want  string // the denying prefix, "" when allowed
	}{
		{"v4 loopback", def, "127.0.0.1", "127.0.0.0/8"},
		{"v4 loopback range", def, "127.255.255.254", "127.0.0.0/8"},
		{"v6 loopback", def, "::1", "::1/128"},
		{"v4 unspecified", def, "0.0.0.0", "0.0.0.0/8"},
		{"this network", def, "0.1.2.3", "0.0.0.0/8"},
		{"v6 unspecified", def, "::", "::/128"},
		{"v4 link-local metadata", def, "169.254.169.254", "169.254.0.0/16"},
		{"v6 link-local", def, "fe80::1", "fe80::/10"},
		{"v6 link-local with zone", def, "fe80::1%eth0", "fe80::/10"},
		{"AWS IPv6 metadata", def, "fd00:ec2::254", "fd00:ec2::254/128"},
		{"Alibaba metadata", def, "100.100.100.200", "100.100.100.200/32"},
		{"IPv4-mapped loopback", def, "::ffff:127.0.0.1", "127.0.0.0/8"},
		{"IPv4-mapped metadata", def, "::ffff:169.254.169.254", "169.254.0.0/16"},
		{"IPv4-mapped unspecified", def, "::ffff:0.0.0.0", "0.0.0.0/8"},
		{"NAT64 metadata", def, "64:ff9b::a9fe:a9fe", "169.254.0.0/16"},
		{"NAT64 loopback", def, "64:ff9b::127.0.0.1", "127.0.0.0/8"},
		{"NAT64 Alibaba metadata", def, "64:ff9b::6464:64c8", "100.100.100.200/32"},
		{"6to4 loopback", def, "2002:7f00:1::1", "127.0.0.0/8"},
		{"6to4 metadata", def, "2002:a9fe:a9fe::", "169.254.0.0/16"},
		{"v4 private allowed", def, "10.1.2.3", ""},
		{"v4 public allowed", def, "8.8.8.8", ""},
		{"v6 documentation allowed", def, "2001:db8::1", ""},
		{"IPv4-mapped public allowed", def, "::ffff:8.8.8.8", ""},
		{"NAT64 public allowed", def, "64:ff9b::808:808", ""},
		{"6to4 public allowed", def, "2002:808:808::1", ""},
		{"other ULA allowed", def, "fd00:ec2::253", ""},
		{"v4 unspecified as loopback", loopbackOnly, "0.0.0.0", "127.0.0.0/8"},
		{"v6 unspecified as loopback", loopbackOnly, "::", "127.0.0.0/8"},
		{"v6 unspecified when only v4 loopback is denied", v4LoopbackOnly, "::", "127.0.0.0/8"},
		{"mapped unspecified as loopback", loopbackOnly, "::ffff:0.0.0.0", "127.0.0.0/8"},
		{"NAT64 unspecified as loopback", loopbackOnly, "64:ff9b::", "127.0.0.0/8"},
		{"unspecified allowed when loopback is", noLoopback, "::", ""},
		{"empty guard allows loopback", Guard{}, "127.0.0.1", ""},
		{"empty guard allows unspecified", Guard{}, "::", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, denied := tt.guard.Denied(netip.MustParseAddr(tt.addr))
			got := ""
			if denied {
				got = p.String()
			}
			if got != tt.want {
				t.Errorf("Denied(%s) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}

func TestGuardCheckHost(t *testing.T) {
	def := mustGuard(t, DefaultDenyCIDRs, "")
	allow := mustGuard(t, DefaultDenyCIDRs, "flags.example.com,*.internal.example.com,10.1.2.3,2001:db8::1,127.0.0.1")
	const denyFlag, allowFlag = " (the manager's --probe-deny-cidrs)", " (the manager's --probe-allow-hosts)"
	tests := []struct {
		name    string
		guard   Guard
		host    string
		wantErr string
	}{
		{"dotted decimal", def, "127.0.0.1", "address 127.0.0.1 is inside denied range 127.0.0.0/8" + denyFlag},
		{"IPv6 in brackets", def, "[::1]", "address ::1 is inside denied range ::1/128" + denyFlag},
		{"IPv6 without brackets", def, "::1", "address ::1 is inside denied range ::1/128" + denyFlag},
		{"IPv4-mapped", def, "[::ffff:127.0.0.1]", "address 127.0.0.1 is inside denied range 127.0.0.0/8" + denyFlag},
		{"unspecified v6", def, "[::]", "address :: is inside denied range ::/128" + denyFlag},
		{"unspecified v4", def, "0.0.0.0", "address 0.0.0.0 is inside denied range 0.0.0.0/8" + denyFlag},
		{"metadata", def, "169.254.169.254", "address 169.254.169.254 is inside denied range 169.254.0.0/16" + denyFlag},
		{"NAT64 metadata", def, "[64:ff9b::a9fe:a9fe]", "address 64:ff9b::a9fe:a9fe (carrying 169.254.169.254) is inside denied range 169.254.0.0/16" + denyFlag},
		{"6to4 loopback", def, "[2002:7f00:1::]", "address 2002:7f00:1:: (carrying 127.0.0.1) is inside denied range 127.0.0.0/8" + denyFlag},
		{"AWS IPv6 metadata", def, "[fd00:ec2::254]", "address fd00:ec2::254 is inside denied range fd00:ec2::254/128" + denyFlag},
		{"decimal", def, "2130706433", "address 127.0.0.1 (written 2130706433) is inside denied range 127.0.0.0/8" + denyFlag},
		{"hex", def, "0x7f000001", "address 127.0.0.1 (written 0x7f000001) is inside denied range 127.0.0.0/8" + denyFlag},
		{"upper-case hex", def, "0X7F000001", "address 127.0.0.1 (written 0x7f000001) is inside denied range 127.0.0.0/8" + denyFlag},
		{"octal", def, "0177.0.0.1", "address 127.0.0.1 (written 0177.0.0.1) is inside denied range 127.0.0.0/8" + denyFlag},
		{"short", def, "127.1", "address 127.0.0.1 (written 127.1) is inside denied range 127.0.0.0/8" + denyFlag},
		{"three parts", def, "169.254.43518", "address 169.254.169.254 (written 169.254.43518) is inside denied range 169.254.0.0/16" + denyFlag},
		{"mixed parts", def, "0xa9.0376.0xa9fe", "address 169.254.169.254 (written 0xa9.0376.0xa9fe) is inside denied range 169.254.0.0/16" + denyFlag},
		{"trailing dot", def, "127.0.0.1.", "address 127.0.0.1 is inside denied range 127.0.0.0/8" + denyFlag},
		{"decimal zero", def, "0", "address 0.0.0.0 (written 0) is inside denied range 0.0.0.0/8" + denyFlag},
		{"allowed private", def, "10.1.2.3", ""},
		{"allowed decimal", def, "167838211", ""}, // 10.1.2.3
		{"allowed v6", def, "[2001:db8::1]", ""},
		{"name not resolved", def, "localhost", ""},
		{"name", def, "flags.example.com", ""},
		{"too many parts is a name", def, "127.0.0.0.1", ""},
		{"part too large is a name", def, "127.0.0.256", ""},
		{"bad octal is a name", def, "0128.0.0.1", ""},
		{"allow exact", allow, "flags.example.com", ""},
		{"allow exact, any case, trailing dot", allow, "FLAGS.Example.com.", ""},
		{"allow wildcard one label", allow, "a.internal.example.com", ""},
		{"allow wildcard two labels", allow, "a.b.internal.example.com", ""},
		{"wildcard excludes its base", allow, "internal.example.com", "host internal.example.com is not in the allowed hosts" + allowFlag},
		{"wildcard needs a dot", allow, "xinternal.example.com", "host xinternal.example.com is not in the allowed hosts" + allowFlag},
		{"exact excludes subdomain", allow, "a.flags.example.com", "host a.flags.example.com is not in the allowed hosts" + allowFlag},
		{"exact excludes suffix", allow, "flags.example.com.evil.net", "host flags.example.com.evil.net is not in the allowed hosts" + allowFlag},
		{"allow IP", allow, "10.1.2.3", ""},
		{"allow IP written otherwise", allow, "167838211", ""},
		{"allow v6", allow, "[2001:db8::1]", ""},
		{"other IP", allow, "10.1.2.4", "host 10.1.2.4 is not in the allowed hosts" + allowFlag},
		{"IP is not a name", mustGuard(t, "", "*.example.com"), "10.1.2.3", "host 10.1.2.3 is not in the allowed hosts" + allowFlag},
		{"allow list before deny list", allow, "127.0.0.1", "address 127.0.0.1 is inside denied range 127.0.0.0/8" + denyFlag},
		{"not allowed and denied", allow, "[::1]", "host [::1] is not in the allowed hosts" + allowFlag},
		{"empty guard", Guard{}, "127.0.0.1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantErr, errText(tt.guard.CheckHost(tt.host))); diff != "" {
				t.Errorf("CheckHost(%q) (-want +got):\n%s", tt.host, diff)
			}
		})
	}
}

// TestGuardCheckHostHeader: a Host header is held to the allow list like a
// URL's host; neither its case, a trailing dot, a port nor a form that
// net/http would send differently gets it past.
func TestGuardCheckHostHeader(t *testing.T) {
	allow := mustGuard(t, DefaultDenyCIDRs, "flags.example.com,*.internal.example.com,10.1.2.3,2001:db8::1")
	const allowFlag = " (the manager's --probe-allow-hosts)"
	const form = "must be a host name or IP address with an optional port (a Host header is held to the manager's --probe-allow-hosts)"
	tests := []struct {
		name    string
		guard   Guard
		value   string
		wantErr string
	}{
		{"allowed", allow, "flags.example.com", ""},
		{"allowed with a port", allow, "flags.example.com:8443", ""},
		{"allowed, any case, trailing dot", allow, "FLAGS.Example.COM.", ""},
		{"allowed, any case, with a port", allow, "Flags.Example.Com:443", ""},
		{"allowed wildcard", allow, "a.internal.example.com:80", ""},
		{"allowed IP with a port", allow, "10.1.2.3:8080", ""},
		{"allowed IPv6 with a port", allow, "[2001:db8::1]:443", ""},
		{"allowed IPv6 without brackets", allow, "2001:db8::1", ""},
		{"allowed IP written otherwise", allow, "167838211", ""},
		{"empty means the URL's host", allow, "", ""},
		{"no allow list allows any host", mustGuard(t, DefaultDenyCIDRs, ""), "anything.example.net", ""},
		{"other host", allow, "admin.example.com", "host admin.example.com is not in the allowed hosts" + allowFlag},
		{"other host, upper case, with a port", allow, "ADMIN.example.com:443", "host admin.example.com is not in the allowed hosts" + allowFlag},
		{"port does not make a host allowed", allow, "evil.example.net:443", "host evil.example.net is not in the allowed hosts" + allowFlag},
		{"allowed name as a prefix", allow, "flags.example.com.evil.net", "host flags.example.com.evil.net is not in the allowed hosts" + allowFlag},
		{"wildcard base", allow, "internal.example.com", "host internal.example.com is not in the allowed hosts" + allowFlag},
		{"other IP", allow, "10.1.2.4:80", "host 10.1.2.4 is not in the allowed hosts" + allowFlag},
		{"loopback", allow, "[::1]:80", "host [::1] is not in the allowed hosts" + allowFlag},
		{"IP written as a name", allow, "2130706433", "host 2130706433 is not in the allowed hosts" + allowFlag},
		// net/http cuts a Host value at '/' or ' ': "evil.example.net"
		// would be sent although the wildcard matches the whole value.
		{"slash", allow, "evil.example.net/x.internal.example.com", form},
		{"space", allow, "evil.example.net x.internal.example.com", form},
		{"userinfo", allow, "evil.example.net@flags.example.com", form},
		{"percent", allow, "evil%2eexample.net.internal.example.com", form},
		{"non-ASCII", allow, "ｅvil.internal.example.com", form},
		{"leading space", allow, " flags.example.com", form},
		{"empty label", allow, "a..internal.example.com", form},
		{"port not a number", allow, "flags.example.com:https", form},
		{"port too long", allow, "flags.example.com:123456", form},
		{"two ports", allow, "flags.example.com:80:80", form},
		{"bracket not closed", allow, "[2001:db8::1", form},
		{"name in brackets", allow, "[flags.example.com]", form},
		{"garbage after brackets", allow, "[2001:db8::1]x", form},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantErr, errText(tt.guard.CheckHostHeader(tt.value))); diff != "" {
				t.Errorf("CheckHostHeader(%q) (-want +got):\n%s", tt.value, diff)
			}
		})
	}
}

func TestParseLiteralIP(t *testing.T) {
	tests := []struct {
		host string
		want string // "" when host is not a literal address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0177.0.0.01", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"10.65535", "10.0.255.255"},
		{"10.65536", "10.1.0.0"},
		{"10.16777216", ""},
		{"4294967295", "255.255.255.255"},
		{"4294967296", ""},
		{"0x", "0.0.0.0"},
		{"[::1]", "::1"},
		{"[::1", ""},
		{"[fe80::1%eth0]", "fe80::1%eth0"},
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1"},
		{"1.2.3.4.5", ""},
		{"1..2", ""},
		{"08", ""},
		{"+1", ""},
		{"1_000", ""},
		{"example.com", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			addr, ok := parseLiteralIP(tt.host)
			got := ""
			if ok {
				got = addr.String()
			}
			if got != tt.want {
				t.Errorf("parseLiteralIP(%q) = %q, want %q", tt.host, got, tt.want)
			}
		})
	}
}

func TestGuardControl(t *testing.T) {
	def := mustGuard(t, DefaultDenyCIDRs, "")
	tests := []struct {
		address string
		wantErr string
	}{
		{"127.0.0.1:80", "probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"[::ffff:127.0.0.1]:443", "probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"[::1]:8080", "probe guard: address ::1 is inside denied range ::1/128"},
		{"[::]:8080", "probe guard: address :: is inside denied range ::/128"},
		{"0.0.0.0:8080", "probe guard: address 0.0.0.0 is inside denied range 0.0.0.0/8"},
		{"[64:ff9b::a9fe:a9fe]:80", "probe guard: address 64:ff9b::a9fe:a9fe (carrying 169.254.169.254) is inside denied range 169.254.0.0/16"},
		{"[fe80::1%eth0]:80", "probe guard: address fe80::1 is inside denied range fe80::/10"},
		{"10.0.0.1:80", ""},
		{"[2001:db8::1]:443", ""},
		{"not-an-address", "probe guard: address not-an-address: missing port in address"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantErr, errText(def.Control("tcp", tt.address, nil))); diff != "" {
				t.Errorf("Control(%q) (-want +got):\n%s", tt.address, diff)
			}
		})
	}
	// The unspecified address is loopback even when it is not listed.
	g := mustGuard(t, "127.0.0.0/8,::1/128", "")
	want := "probe guard: address :: (unspecified, which reaches loopback) is inside denied range 127.0.0.0/8"
	if diff := cmp.Diff(want, errText(g.Control("tcp6", "[::]:80", nil))); diff != "" {
		t.Errorf("Control([::]:80) (-want +got):\n%s", diff)
	}
}

func mustGuard(t *testing.T, deny, allow string) Guard {
	t.Helper()
	g, err := ParseGuard(deny, allow)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
