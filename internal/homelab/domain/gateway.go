package domain

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

// Gateway serves the Domain's hosts on the selected ingress gateway pods: HTTPS on 443 terminating TLS
// with the certificate's Secret, and plain HTTP on 80 answering every request with a redirect to HTTPS.
// Workloads attach with VirtualServices naming it (GatewayRef).
func Gateway(d *homelabv1.Domain, gatewayNamespace string, selector map[string]string) *istio.Gateway {
	return &istio.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: istio.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: ChildName(d), Namespace: gatewayNamespace, Labels: Labels(d)},
		Spec: istio.GatewaySpec{
			Selector: selector,
			Servers: []istio.Server{
				{
					Port:  istio.Port{Number: 443, Protocol: "HTTPS", Name: "https"},
					Hosts: Hosts(d),
					TLS:   &istio.ServerTLS{Mode: "SIMPLE", CredentialName: TLSSecretName(d)},
				},
				{
					Port:  istio.Port{Number: 80, Protocol: "HTTP", Name: "http"},
					Hosts: Hosts(d),
					TLS:   &istio.ServerTLS{HTTPSRedirect: true},
				},
			},
		},
	}
}

// GatewayRef is how a VirtualService names the Domain's Gateway: namespace/name.
func GatewayRef(d *homelabv1.Domain, gatewayNamespace string) string {
	return gatewayNamespace + "/" + ChildName(d)
}
