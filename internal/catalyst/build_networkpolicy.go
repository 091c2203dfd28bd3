package catalyst

import (
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/addrguard"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

// BuildNetworkPolicyName names the NetworkPolicy, in a Project's namespace, that fences the build pods.
const BuildNetworkPolicyName = "catalyst-build"

// PublicIPv4 and PublicIPv6 are the build pods' public destinations: every address but the ranges
// addrguard refuses that a NetworkPolicy can name: the cluster's and the node's networks (private,
// shared, loopback), link-local (a cloud's metadata service at 169.254.169.254), and the IPv6
// equivalents (IPv4-mapped IPv6 addresses are IPv4 on the wire, and the API server refuses them in an
// except of ::/0). An API server on a private address is among them.
var (
	PublicIPv4 = networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4"}}
	PublicIPv6 = networkingv1.IPBlock{CIDR: "::/0", Except: []string{
		"::1/128", "64:ff9b::/96", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8"}}
)

// BuildDestination is a place the build pods connect to on a private address: a host an administrator
// listed (--catalyst-registries, --catalyst-git-hosts) that the policy can name, on one TCP port.
type BuildDestination struct {
	// Port is the TCP port.
	Port int32
	// CIDR is the address of a host listed as an IP literal (/32 or /128).
	CIDR string
	// Namespace is the namespace of a listed in-cluster Service host (<service>.<namespace>.svc[.…]):
	// its pods, whatever their addresses.
	Namespace string
}

// BuildEgress is where a namespace's build pods may connect besides DNS: PublicPorts on public addresses
// only, and Private destinations. Sorted, without repeats, so every Environment sends the same policy.
type BuildEgress struct {
	PublicPorts []int32
	Private     []BuildDestination
}

// BuildNetworkPolicy is the NetworkPolicy BuildNetworkPolicyName in namespace ns. It selects only the
// operator's build pods (app.kubernetes.io/name catalyst-build with the managed-by label) and lets
// nothing in. Out: DNS (port 53, UDP and TCP, to any address: a node-local DNS cache listens on a
// link-local one); TCP 443 and egress.PublicPorts to public addresses only (PublicIPv4, PublicIPv6: never
// link-local, private or loopback, so neither a cloud's metadata service nor the cluster's API server
// and Services); and each private destination on its port alone. Registries and Git servers are named
// by host and a NetworkPolicy cannot name a host: a listed host the policy cannot name (a private name
// outside the cluster) is reachable only through an administrator's own policy (docs/catalyst.md).
func BuildNetworkPolicy(ns string, egress BuildEgress) *networkingv1.NetworkPolicy {
	public := []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 443)}
	for _, p := range egress.PublicPorts {
		if p != 443 {
			public = append(public, port(corev1.ProtocolTCP, p))
		}
	}
	v4, v6 := *PublicIPv4.DeepCopy(), *PublicIPv6.DeepCopy()
	rules := []networkingv1.NetworkPolicyEgressRule{
		{Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, 53), port(corev1.ProtocolTCP, 53)}},
		{Ports: public, To: []networkingv1.NetworkPolicyPeer{{IPBlock: &v4}, {IPBlock: &v6}}},
	}
	for _, d := range egress.Private {
		peer := networkingv1.NetworkPolicyPeer{}
		switch {
		case d.CIDR != "":
			peer.IPBlock = &networkingv1.IPBlock{CIDR: d.CIDR}
		case d.Namespace != "":
			peer.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: d.Namespace}}
		default:
			continue
		}
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{
			Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, d.Port)}, To: []networkingv1.NetworkPolicyPeer{peer}})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: BuildNetworkPolicyName, Namespace: ns,
			Labels: labels.Labels(BuildApp, BuildNetworkPolicyName)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{
				labels.NameLabel: BuildApp, labels.ManagedByLabel: labels.OperatorName}},
			// Ingress listed with no rule: nothing may connect to a build pod.
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress:      rules,
		},
	}
}

// BuildEgressOf is where the build pods of a namespace's Projects connect: for each Project whose
// registry the operator allows (after WithDefaultBuild; RegistryAllowed) that registry's port (443, or
// 80 too for a plain-http registry named without a port, which the builder tries after https), and for
// each whose repository URL it allows (GitAllowed) the Git host's port (443 unless the URL names one).
// A Project's registry or Git host that is not allowed opens nothing. A host an administrator listed
// that is an IP literal on a non-public address, or an in-cluster Service name, is a private
// destination; everything else is reached on public addresses only. The policy is the namespace's,
// shared by its Projects, so it is made from all of them.
func BuildEgressOf(projects []catalystv1.Project, cfg BuildConfig) BuildEgress {
	var out BuildEgress
	add := func(host string, ports []int32, listed bool) {
		dest, private := privateDestination(host, listed)
		for _, p := range ports {
			if private {
				dest.Port = p
				out.Private = append(out.Private, dest)
			} else {
				out.PublicPorts = append(out.PublicPorts, p)
			}
		}
	}
	for i := range projects {
		p := WithDefaultBuild(&projects[i], cfg)
		if b := p.Spec.Build; b != nil && RegistryAllowed(b.Registry, cfg.Registries) {
			host := b.Registry
			if h, _, err := net.SplitHostPort(b.Registry); err == nil {
				host = h
			}
			add(host, registryPorts(b.Registry, cfg.InsecureRegistries), len(cfg.Registries) > 0)
		}
		raw := p.Spec.Source.RepositoryURL
		if cfg.GitAllowed != nil && cfg.GitAllowed(raw) != nil {
			continue
		}
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			add(u.Hostname(), []int32{urlPort(u)}, hostListed(u.Hostname(), cfg.GitHosts))
		}
	}
	slices.Sort(out.PublicPorts)
	out.PublicPorts = slices.Compact(out.PublicPorts)
	cmp := func(a, b BuildDestination) int {
		if c := strings.Compare(a.CIDR, b.CIDR); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return int(a.Port - b.Port)
	}
	slices.SortFunc(out.Private, cmp)
	out.Private = slices.CompactFunc(out.Private, func(a, b BuildDestination) bool { return cmp(a, b) == 0 })
	return out
}

// privateDestination is where a listed host is, when the policy can name it and it is not public: an
// IP literal on a non-public address, or <service>.<namespace>.svc[.<cluster domain>].
func privateDestination(host string, listed bool) (BuildDestination, bool) {
	if !listed {
		return BuildDestination{}, false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if addrguard.Blocked(ip) == "" {
			return BuildDestination{}, false
		}
		ip = ip.Unmap()
		return BuildDestination{CIDR: netip.PrefixFrom(ip, ip.BitLen()).String()}, true
	}
	parts := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	if len(parts) >= 3 && parts[2] == "svc" && parts[1] != "" {
		return BuildDestination{Namespace: parts[1]}, true
	}
	return BuildDestination{}, false
}

// hostListed is whether host is one of listed (names compare without case and trailing dot).
func hostListed(host string, listed []string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, l := range listed {
		if l = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(l)), "."); l != "" && l == host {
			return true
		}
	}
	return false
}

// registryPorts are the ports the builder may use for registry (host or host:port).
func registryPorts(registry string, insecure []string) []int32 {
	if _, p, err := net.SplitHostPort(registry); err == nil {
		if n, err := strconv.ParseUint(p, 10, 16); err == nil && n > 0 {
			return []int32{int32(n)}
		}
		return nil
	}
	if PlainHTTP(registry, insecure) {
		return []int32{443, 80}
	}
	return []int32{443}
}

// urlPort is the TCP port of a Git URL: its own, else its scheme's.
func urlPort(u *url.URL) int32 {
	if n, err := strconv.ParseUint(u.Port(), 10, 16); err == nil && n > 0 {
		return int32(n)
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}
