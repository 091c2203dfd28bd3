package addrguard

import (
	"errors"
	"testing"
)

// TestCheck: the rule on the address about to be connected to. It is tested without connecting: a test
// must not send a packet to a metadata service or a private network should the rule break.
func TestCheck(t *testing.T) {
	tests := []struct {
		addr, reason string
	}{
		{"169.254.169.254:80", "link-local"},
		{"[fe80::1]:443", "link-local"},
		{"10.0.0.1:443", "private"},
		{"192.168.1.1:443", "private"},
		{"172.16.0.1:443", "private"},
		{"[fd00::1]:443", "private"},
		{"127.0.0.1:5000", "loopback"},
		{"[::1]:5000", "loopback"},
		{"0.0.0.0:443", "unspecified"},
		{"224.0.0.1:443", "link-local"},
		{"239.1.1.1:443", "multicast"},
		{"100.64.0.1:443", "shared (carrier-grade NAT)"},
		{"[::ffff:169.254.169.254]:80", "link-local"},
		{"[64:ff9b::a9fe:a9fe]:80", "link-local"},
		// Positive controls: public addresses pass.
		{"140.82.112.3:443", ""},
		{"[2606:4700::1111]:443", ""},
	}
	for _, tt := range tests {
		var got *Refusal
		err := check("registry.example", tt.addr, func(r Refusal) error { got = &r; return errors.New("refused") })
		switch {
		case tt.reason == "" && (err != nil || got != nil):
			t.Errorf("%s: refused (%v), want allowed", tt.addr, got)
		case tt.reason != "" && (err == nil || got == nil || got.Reason != tt.reason || got.Host != "registry.example"):
			t.Errorf("%s: refusal %+v (err %v), want reason %q", tt.addr, got, err, tt.reason)
		}
	}
}
