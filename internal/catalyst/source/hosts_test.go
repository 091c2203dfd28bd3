package source

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestBlocked(t *testing.T) {
	tests := []struct {
		addr string
		want string // "" for a public address
	}{
		{"140.82.112.3", ""}, // github.com
		{"2606:50c0:8000::153", ""},
		{"8.8.8.8", ""},
		{"64:ff9b::8c52:7003", ""}, // NAT64 of a public address (IPv6-only clusters reach GitHub so)
		{"127.0.0.1", "loopback"},
		{"127.1.2.3", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this-network"},
		{"224.0.0.1", "link-local"},
		{"239.1.2.3", "multicast"},
		{"ff02::1", "link-local"},
		{"ff05::1", "multicast"},
		{"100.64.0.1", "shared (carrier-grade NAT)"},
		{"100.127.255.254", "shared (carrier-grade NAT)"},
		{"100.128.0.1", ""},
		{"192.0.0.170", "IETF protocol assignment"},
		{"198.18.0.1", "benchmarking"},
		{"255.255.255.255", "reserved"},
		{"64:ff9b::a9fe:a9fe", "link-local"}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", "loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := blocked(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Errorf("blocked(%s) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		hosts   []string
		wantErr string // "" when allowed
	}{
		{name: "public https", url: "https://github.com/org/repo"},
		{name: "public address", url: "https://140.82.112.3/org/repo"},
		{name: "plain http, not listed", url: "http://github.com/org/repo", wantErr: "plain http is fetched only from a host the operator lists"},
		{name: "plain http, listed", url: "http://gitea.git.svc/org/repo", hosts: []string{"gitea.git.svc"}},
		{name: "file", url: "file:///etc", wantErr: `scheme "file" is not fetched`},
		{name: "ssh", url: "ssh://git@github.com/org/repo", wantErr: `scheme "ssh" is not fetched`},
		{name: "scp-like", url: "git@github.com:org/repo", wantErr: "cannot be parsed"},
		{name: "credentials in the url", url: "https://user:hunter2@github.com/org/repo", wantErr: "carries credentials in its URL"},
		{name: "no host", url: "https:///org/repo", wantErr: "names no host"},
		{name: "loopback", url: "https://127.0.0.1:8443/org/repo", wantErr: "127.0.0.1 is a loopback address"},
		{name: "loopback, listed", url: "https://127.0.0.1:8443/org/repo", hosts: []string{"127.0.0.1"}},
		{name: "ipv6 loopback", url: "https://[::1]/org/repo", wantErr: "::1 is a loopback address"},
		{name: "mapped loopback", url: "https://[::ffff:127.0.0.1]/org/repo", wantErr: "loopback address"},
		{name: "metadata", url: "http://169.254.169.254/latest/meta-data", wantErr: "plain http"},
		{name: "metadata over https", url: "https://169.254.169.254/latest/meta-data", wantErr: "169.254.169.254 is a link-local address"},
		{name: "private", url: "https://10.96.0.1/org/repo", wantErr: "10.96.0.1 is a private address"},
		{name: "cgnat", url: "https://100.64.0.10/org/repo", wantErr: "carrier-grade NAT"},
		{name: "unlisted host", url: "https://github.com/org/repo", hosts: []string{"git.example.com"}, wantErr: `host "github.com" is not one the operator may fetch from (git.example.com)`},
		{name: "listed host, other case", url: "https://Git.Example.com./org/repo", hosts: []string{"git.example.com"}},
		{name: "listed host, private address", url: "https://10.0.0.7/org/repo", hosts: []string{"10.0.0.7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := (&Fetcher{Hosts: tt.hosts}).Allowed(tt.url)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Allowed(%s) = %v, want nil", tt.url, err)
				}
				return
			}
			if !errors.Is(err, ErrURLNotAllowed) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Allowed(%s) = %v, want ErrURLNotAllowed containing %q", tt.url, err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}
