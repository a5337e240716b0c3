package probe

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseGuard(t *testing.T) {
	tests := []struct {
		cidrs   string
		wantErr string
		n       int
	}{
		{cidrs: DefaultDenyCIDRs, n: 5},
		{cidrs: "", n: 0},
		{cidrs: " 10.0.0.0/8 , ,192.168.0.0/16", n: 2},
		{cidrs: "10.0.0.1/8", n: 1},
		{cidrs: "10.0.0.0", wantErr: `invalid CIDR "10.0.0.0"`},
		{cidrs: "127.0.0.0/8,nope/3", wantErr: `invalid CIDR "nope/3"`},
	}
	for _, tt := range tests {
		t.Run(tt.cidrs, func(t *testing.T) {
			g, err := ParseGuard(tt.cidrs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseGuard(%q) error = %v, want it to contain %q", tt.cidrs, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseGuard(%q): %v", tt.cidrs, err)
			}
			if len(g.denied) != tt.n {
				t.Errorf("ParseGuard(%q) has %d prefixes, want %d", tt.cidrs, len(g.denied), tt.n)
			}
		})
	}
}

func TestGuardDenied(t *testing.T) {
	def, err := ParseGuard(DefaultDenyCIDRs)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr   string
		denied bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"169.254.169.254", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"0.0.0.0", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"10.1.2.3", false},
		{"8.8.8.8", false},
		{"2001:db8::1", false},
		{"::ffff:8.8.8.8", false},
		{"::", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			_, denied := def.Denied(netip.MustParseAddr(tt.addr))
			if denied != tt.denied {
				t.Errorf("Denied(%s) = %v, want %v", tt.addr, denied, tt.denied)
			}
		})
	}
	if _, denied := (Guard{}).Denied(netip.MustParseAddr("127.0.0.1")); denied {
		t.Error("the empty guard denied 127.0.0.1; it must allow every address")
	}
}

func TestGuardCheckHostAndControl(t *testing.T) {
	def, _ := ParseGuard(DefaultDenyCIDRs)
	tests := []struct {
		host    string
		wantErr string
	}{
		{"127.0.0.1", "address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"[::1]", "address ::1 is inside denied range ::1/128"},
		{"[::ffff:127.0.0.1]", "address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"169.254.169.254", "inside denied range 169.254.0.0/16"},
		{"flags.example.com", ""},
		{"localhost", ""}, // names are checked when connecting, not here
		{"93.184.216.34", ""},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			err := def.CheckHost(tt.host)
			if msg := errText(err); !strings.Contains(msg, tt.wantErr) || (tt.wantErr == "") != (err == nil) {
				t.Errorf("CheckHost(%q) = %q, want %q", tt.host, msg, tt.wantErr)
			}
		})
	}

	controls := []struct {
		address string
		wantErr string
	}{
		{"127.0.0.1:80", "probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"[::ffff:127.0.0.1]:443", "probe guard: address 127.0.0.1 is inside denied range 127.0.0.0/8"},
		{"[::1]:8080", "probe guard: address ::1 is inside denied range ::1/128"},
		{"10.0.0.1:80", ""},
		{"not-an-address", "probe guard: address not-an-address: missing port in address"},
	}
	for _, tt := range controls {
		t.Run("control "+tt.address, func(t *testing.T) {
			err := def.Control("tcp", tt.address, nil)
			if msg := errText(err); msg != tt.wantErr {
				t.Errorf("Control(%q) = %q, want %q", tt.address, msg, tt.wantErr)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
