package catalyst

import (
	"net"
	"net/url"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

// BuildNetworkPolicyName names the NetworkPolicy, in a Project's namespace, that fences the build pods.
const BuildNetworkPolicyName = "catalyst-build"

// BuildNetworkPolicy is the NetworkPolicy BuildNetworkPolicyName in namespace ns. It selects only the
// operator's build pods (app.kubernetes.io/name catalyst-build with the managed-by label) and lets
// nothing in; out, only DNS (port 53, UDP and TCP) and TCP 443 plus ports, to any address: registries
// and Git servers are named by host, so their addresses cannot be known, only their ports.
func BuildNetworkPolicy(ns string, ports []int32) *networkingv1.NetworkPolicy {
	out := []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, 443)}
	for _, p := range ports {
		if p != 443 {
			out = append(out, port(corev1.ProtocolTCP, p))
		}
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
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, 53), port(corev1.ProtocolTCP, 53)}},
				{Ports: out},
			},
		},
	}
}

// BuildPorts are the TCP ports the build pods of a namespace's Projects connect to: the port of each
// one's registry (after WithDefaultBuild; 443, or 80 too for a plain-http registry named without a port,
// which the builder tries after https) and of its repository URL (443 unless it names one), sorted,
// without repeats. The policy is the namespace's, shared by its Projects, so it is made from all of
// them: one Environment's reconcile and another's then send the same policy.
func BuildPorts(projects []catalystv1.Project, cfg BuildConfig) []int32 {
	var ports []int32
	for i := range projects {
		p := WithDefaultBuild(&projects[i], cfg)
		if b := p.Spec.Build; b != nil {
			ports = append(ports, registryPorts(b.Registry, cfg.InsecureRegistries)...)
		}
		if u, err := url.Parse(p.Spec.Source.RepositoryURL); err == nil && u.Host != "" {
			ports = append(ports, urlPort(u))
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
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
