// Package addrguard holds the one rule of which addresses the operator connects to on a tenant's word
// (a Git repository URL, a Project's registry, a registry's bearer realm): public addresses only, unless
// an administrator listed the host. It is checked on the address actually dialled, so a name that
// resolves (or is rebound) to an internal address is refused too.
package addrguard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// nat64 is the well-known NAT64 prefix (RFC 6052): its addresses carry an IPv4 address in their last four
// bytes, which is where the connection really goes.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// blockedPrefixes are the ranges netip has no predicate for that no public server lives in.
var blockedPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// Blocked says why the operator does not connect to ip unless its host is listed, or "" when ip is a
// public address: the cluster's own network, the node, and the cloud's metadata service are not reachable
// through a name a tenant writes.
func Blocked(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range blockedPrefixes {
		if p.prefix.Contains(ip) {
			return p.reason
		}
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return Blocked(netip.AddrFrom4([4]byte(b[12:])))
	}
	return ""
}

// Refusal is a connection refused by the rule: the host asked for, the address it resolved to, and
// the rule's reason (Blocked's).
type Refusal struct {
	Host   string
	Addr   netip.Addr
	Reason string
}

// DialTimeout bounds one TCP connection attempt.
const DialTimeout = 10 * time.Second

// Dialer is a DialContext that connects to a host listed(host) says is listed wherever it resolves, and
// to any other host only on a public address: the check runs on the address about to be connected to
// (net.Dialer.Control), after resolution. A refusal is passed to refuse, whose error is the dial's.
func Dialer(listed func(host string) bool, refuse func(Refusal) error) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
		if listed(host) {
			return d.DialContext(ctx, network, addr)
		}
		d.Control = func(_, address string, _ syscall.RawConn) error { return check(host, address, refuse) }
		return d.DialContext(ctx, network, addr)
	}
}

// check is the rule on one address about to be connected to (ip:port), for host.
func check(host, address string, refuse func(Refusal) error) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refuse(Refusal{Host: host, Reason: fmt.Sprintf("an address that cannot be checked (%q)", address)})
	}
	if reason := Blocked(ap.Addr()); reason != "" {
		return refuse(Refusal{Host: host, Addr: ap.Addr().Unmap(), Reason: reason})
	}
	return nil
}
