package homelab

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/nspolicy"
)

// FlagDomainPolicy is the operator flag that says which namespaces may claim which hostnames, with which
// ClusterIssuers (ParseDomainPolicy).
const FlagDomainPolicy = "homelab-domain-policy"

// DomainPolicy is what the administrator lets each namespace claim with a Domain: hostnames under some
// suffixes, signed by some ClusterIssuers. The zero policy allows nothing: on a cluster shared by teams,
// a namespace editor must not get a certificate for any name from any issuer on the shared gateway
// until the administrator says so.
type DomainPolicy struct {
	rules []domainRule
}

// domainRule is one entry of the policy: namespace (or "*", every namespace) may claim hostnames under
// suffixes (or "*", any hostname) with issuers (empty: any ClusterIssuer).
type domainRule struct {
	namespace string
	suffixes  []string
	issuers   []string
}

// ParseDomainPolicy reads --homelab-domain-policy: entries separated by ";", each
// NAMESPACE=SUFFIX|SUFFIX[:ISSUER|ISSUER]. NAMESPACE is a namespace or "*" (every namespace); a SUFFIX
// allows the hostname itself and every name below it ("example.com" allows example.com and
// home.example.com, not badexample.com), "*" any hostname; ISSUERs are the ClusterIssuers the entry's
// hostnames may be signed by, all of them when left out. A namespace may claim what any entry naming it
// or "*" allows. Blanks around the separators are ignored; an empty string is the policy that allows
// nothing.
func ParseDomainPolicy(s string) (DomainPolicy, error) {
	var p DomainPolicy
	err := nspolicy.Parse(FlagDomainPolicy, "NAMESPACE=SUFFIX|SUFFIX[:ISSUER|ISSUER]", s, func(e nspolicy.Entry) error {
		r := domainRule{namespace: e.Namespace}
		suffixes, issuers, hasIssuers := strings.Cut(e.Value, ":")
		var err error
		r.suffixes, err = e.List(suffixes, func(suffix string) bool {
			return suffix == nspolicy.Any || len(validation.IsDNS1123Subdomain(suffix)) == 0
		}, "suffix %q is neither a lowercase DNS name nor *")
		if err != nil {
			return err
		}
		if hasIssuers {
			r.issuers, err = e.List(issuers, func(issuer string) bool {
				return len(validation.IsDNS1123Subdomain(issuer)) == 0
			}, "%q is not a ClusterIssuer name")
			if err != nil {
				return err
			}
		}
		p.rules = append(p.rules, r)
		return nil
	})
	if err != nil {
		return DomainPolicy{}, err
	}
	return p, nil
}

// Allows says whether a Domain in namespace ns may claim hostname with ClusterIssuer issuer; when it may
// not, the message says what the policy lets the namespace claim, for the Domain's condition and the
// webhook's refusal.
func (p DomainPolicy) Allows(ns, hostname, issuer string) (bool, string) {
	var suffixes []string
	issuerRefused := false
	for _, r := range p.rules {
		if r.namespace != "*" && r.namespace != ns {
			continue
		}
		suffixes = append(suffixes, r.suffixes...)
		if !slices.ContainsFunc(r.suffixes, func(s string) bool { return underSuffix(hostname, s) }) {
			continue
		}
		if len(r.issuers) == 0 || slices.Contains(r.issuers, issuer) {
			return true, ""
		}
		issuerRefused = true
	}
	switch {
	case len(suffixes) == 0:
		return false, fmt.Sprintf("the operator's --%s lets namespace %s claim no hostname; ask the cluster administrator", FlagDomainPolicy, ns)
	case issuerRefused:
		return false, fmt.Sprintf("the operator's --%s does not let namespace %s have %s signed by ClusterIssuer %s", FlagDomainPolicy, ns, hostname, issuer)
	default:
		slices.Sort(suffixes)
		return false, fmt.Sprintf("the operator's --%s lets namespace %s claim only hostnames under %s, not %s",
			FlagDomainPolicy, ns, strings.Join(slices.Compact(suffixes), ", "), hostname)
	}
}

// underSuffix says whether hostname is suffix or a name below it; "*" is every hostname.
func underSuffix(hostname, suffix string) bool {
	return suffix == "*" || hostname == suffix || strings.HasSuffix(hostname, "."+suffix)
}

// parentName is hostname without its first label: the name whose wildcard covers hostname.
func parentName(hostname string) string {
	_, parent, _ := strings.Cut(hostname, ".")
	return parent
}

// hostnamesOverlap says whether Domains for a and b would serve a common name: each serves its hostname
// h and *.h (one label below), so they overlap when the hostnames are equal or one is one label below the
// other (example.com's *.example.com covers a.example.com). Two names one label below the same parent
// (a.example.com and b.example.com) do not overlap, nor do names two labels apart.
func hostnamesOverlap(a, b string) bool {
	return a == b || parentName(a) == b || parentName(b) == a
}

// claimIndexValues are what the hostname index holds for a Domain: its hostname and its parent, so that
// listing by a hostname h and by h's parent finds every Domain whose hostname overlaps h (and siblings,
// which hostnamesOverlap then leaves out).
func claimIndexValues(d *homelabv1.Domain) []string {
	if p := parentName(d.Spec.Hostname); p != "" {
		return []string{d.Spec.Hostname, p}
	}
	return []string{d.Spec.Hostname}
}

// claimsBefore says whether Domain a claimed its hostname before b: the older creationTimestamp, then
// namespace/name (creationTimestamp has a one-second resolution).
func claimsBefore(a, b *homelabv1.Domain) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// domainAllowsNamespace says whether Domain d may be named by a resource in namespace ns: its own
// namespace always, another one only through spec.allowedNamespaces (a namespace or "*").
func domainAllowsNamespace(d *homelabv1.Domain, ns string) bool {
	return d.Namespace == ns || slices.Contains(d.Spec.AllowedNamespaces, ns) || slices.Contains(d.Spec.AllowedNamespaces, "*")
}
