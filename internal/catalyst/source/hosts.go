package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/platform-operator/platform-operator/internal/catalyst/addrguard"
)

// ErrURLNotAllowed is a repository URL the operator does not fetch from: a scheme other than https (plain
// http to a listed host aside), credentials in the URL, a host outside Hosts, or, when Hosts is empty, a
// host whose address is not a public one.
var ErrURLNotAllowed = errors.New("repository URL not allowed")

// blocked is addrguard.Blocked: the one rule of the operator's connections on a tenant's word.
func blocked(ip netip.Addr) string { return addrguard.Blocked(ip) }

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
// host only when Hosts is empty, and then only to a public address (addrguard), checked on the address
// actually connected to, so a name that resolves (or is rebound) to an internal address is refused too. A
// refusal is recorded in st, whose message then replaces the transport's.
func (f *Fetcher) dialer(st *fetchState) func(ctx context.Context, network, addr string) (net.Conn, error) {
	guarded := addrguard.Dialer(f.listed, func(r addrguard.Refusal) error {
		if !r.Addr.IsValid() {
			return st.fail(fmt.Errorf("%w: host %q resolves to %s", ErrURLNotAllowed, r.Host, r.Reason))
		}
		return st.fail(fmt.Errorf("%w: host %q resolves to %s, a %s address, which the operator fetches from only when the host is listed (--catalyst-git-hosts)",
			ErrURLNotAllowed, r.Host, r.Addr, r.Reason))
	})
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if len(f.Hosts) > 0 && !f.listed(host) {
			// Reached by a redirect: the URL's own host was checked by Allowed.
			return nil, st.fail(fmt.Errorf("%w: host %q is not one the operator may fetch from (%s)",
				ErrURLNotAllowed, host, strings.Join(f.Hosts, ", ")))
		}
		return guarded(ctx, network, addr)
	}
}
