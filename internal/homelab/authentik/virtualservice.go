package authentik

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

// VirtualService serves authentik.<domainHostname> through the Domain's Gateway (namespace/name, from
// the Domain's status.gateway), sending every request to the Service.
func VirtualService(a *homelabv1.AuthentikServer, domainHostname, gateway string) *istio.VirtualService {
	return &istio.VirtualService{
		TypeMeta:   metav1.TypeMeta{APIVersion: istio.GroupVersion.String(), Kind: "VirtualService"},
		ObjectMeta: objectMeta(a, VirtualServiceName(a)),
		Spec: istio.VirtualServiceSpec{
			Hosts:    []string{Host(domainHostname)},
			Gateways: []string{gateway},
			HTTP: []istio.HTTPRoute{{Route: []istio.HTTPRouteDestination{{Destination: istio.Destination{
				Host: ServiceHost(a), Port: &istio.PortSelector{Number: ServicePort}}}}}},
		},
	}
}
