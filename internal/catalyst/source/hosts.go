package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrURLNotAllowed is a repository URL the operator does not fetch from: a scheme other than https (plain
// http to a listed host aside), credentials in the URL, a host outside Hosts, or, when Hosts is empty, a
// host whose address is not a public one.
var ErrURLNotAllowed = errors.New("repository URL not allowed")

// dialTimeout bounds one TCP connection attempt.
const dialTimeout = 10 * time.Second

// nat64 is the well-known NAT64 prefix (RFC 6052): its addresses carry an IPv4 address in their last four
// bytes, which is where the connection really goes.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// blockedPrefixes are the ranges netip has no predicate for that no public Git server lives in.
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

// blocked says why the operator does not connect to ip unless its host is listed, or "" when ip is a
// public address: the cluster's own network, the node, and the cloud's metadata service are not reachable
// through a tenant's repository URL.
func blocked(ip netip.Addr) string {
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
		return blocked(netip.AddrFrom4([4]byte(b[12:])))
	}
	return ""
}

// listed is whether host is one of Hosts; names compare without case and without a trailing dot.
func (f *Fetcher) listed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range f.Hosts {
		if strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".") == host && host != "" {
			return true
		}
	}
	return false
}

// Allowed checks a repository URL without connecting anywhere: https (plain http only to a host in
// Hosts), no credentials in the URL (they belong in a Secret), a host in Hosts when Hosts is not empty,
// and otherwise no IP literal that is not a public address. A name is checked again on every connection,
// on the address it resolves to (see With), which this check cannot do; callers that hand the URL to
// something else (a build Pod) apply this part of the rule before they do.
func (f *Fetcher) Allowed(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // The url.Error repeats the URL, credentials included.
		}
		return fmt.Errorf("%w: the repository URL cannot be parsed: %w", ErrURLNotAllowed, err)
	}
	shown := u.Redacted()
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("%w: repository %s: scheme %q is not fetched, only https", ErrURLNotAllowed, shown, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: repository %s carries credentials in its URL; they belong in the Project's secretRef",
			ErrURLNotAllowed, shown)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: repository %s names no host", ErrURLNotAllowed, shown)
	}
	listed := f.listed(host)
	if u.Scheme == "http" && !listed {
		return fmt.Errorf("%w: repository %s: plain http is fetched only from a host the operator lists (--catalyst-git-hosts); use https",
			ErrURLNotAllowed, shown)
	}
	if len(f.Hosts) > 0 && !listed {
		return fmt.Errorf("%w: repository %s: host %q is not one the operator may fetch from (%s)",
			ErrURLNotAllowed, shown, host, strings.Join(f.Hosts, ", "))
	}
	if !listed {
		if ip, err := netip.ParseAddr(host); err == nil {
			if reason := blocked(ip); reason != "" {
				return fmt.Errorf("%w: repository %s: %s is a %s address, which the operator fetches from only when the host is listed (--catalyst-git-hosts)",
					ErrURLNotAllowed, shown, host, reason)
			}
		}
	}
	return nil
}

// dialer connects to a Git server for one fetch. A listed host is dialled wherever it resolves; any other
// host only when Hosts is empty, and then only to a public address, checked on the address actually
// connected to, so a name that resolves (or is rebound) to an internal address is refused too. A refusal
// is recorded in st, whose message then replaces the transport's.
func (f *Fetcher) dialer(st *fetchState) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
		if f.listed(host) {
			return d.DialContext(ctx, network, addr)
		}
		if len(f.Hosts) > 0 {
			// Reached by a redirect: the URL's own host was checked by Allowed.
			return nil, st.fail(fmt.Errorf("%w: host %q is not one the operator may fetch from (%s)",
				ErrURLNotAllowed, host, strings.Join(f.Hosts, ", ")))
		}
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return st.fail(fmt.Errorf("%w: host %q: address %q cannot be checked: %w", ErrURLNotAllowed, host, address, err))
			}
			if reason := blocked(ap.Addr()); reason != "" {
				return st.fail(fmt.Errorf("%w: host %q resolves to %s, a %s address, which the operator fetches from only when the host is listed (--catalyst-git-hosts)",
					ErrURLNotAllowed, host, ap.Addr().Unmap(), reason))
			}
			return nil
		}
		return d.DialContext(ctx, network, addr)
	}
}
