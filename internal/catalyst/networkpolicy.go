package catalyst

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// NetworkPolicyName names the NetworkPolicy in an environment's namespace.
const NetworkPolicyName = "catalyst"

// namespaceNameLabel is the label Kubernetes puts on every namespace, holding its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// NetworkPolicy locks every pod of the namespace down: ingress only from pods of the same namespace and
// of the ingress controller's namespace; egress only to DNS (port 53, UDP and TCP) and to what egress
// allows. An empty ingressNamespace admits the same namespace only.
func NetworkPolicy(env *catalystv1.Environment, ns, ingressNamespace string, egress []catalystv1.EgressRule) *networkingv1.NetworkPolicy {
	from := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	if ingressNamespace != "" {
		from = append(from, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{namespaceNameLabel: ingressNamespace}}})
	}
	rules := []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{
		port(corev1.ProtocolUDP, 53), port(corev1.ProtocolTCP, 53),
	}}}
	for _, e := range egress {
		r := networkingv1.NetworkPolicyEgressRule{}
		for _, p := range e.Ports {
			proto := corev1.Protocol(p.Protocol)
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			r.Ports = append(r.Ports, port(proto, p.Port))
		}
		for _, c := range e.CIDRs {
			r.To = append(r.To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
		}
		rules = append(rules, r)
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: objectMeta(env, ns, NetworkPolicyName),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: from}},
			Egress:      rules,
		},
	}
}

func port(proto corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(n)
	return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
}
