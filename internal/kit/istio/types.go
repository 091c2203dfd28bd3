package istio

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is networking.istio.io/v1, served since Istio 1.22.
	GroupVersion = schema.GroupVersion{Group: "networking.istio.io", Version: "v1"}
	// SchemeBuilder registers Gateway and VirtualService.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds Gateway and VirtualService to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Gateway is an Istio Gateway: the ports, hosts and TLS settings of a set of ingress gateway pods.
// +kubebuilder:object:root=true
type Gateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GatewaySpec `json:"spec,omitempty"`
}

// GatewaySpec selects the gateway pods and lists what they serve.
type GatewaySpec struct {
	// Selector picks the ingress gateway pods by label.
	Selector map[string]string `json:"selector,omitempty"`
	// Servers are the listeners.
	Servers []Server `json:"servers,omitempty"`
}

// Server is one listener of a Gateway.
type Server struct {
	Port  Port       `json:"port"`
	Hosts []string   `json:"hosts,omitempty"`
	TLS   *ServerTLS `json:"tls,omitempty"`
}

// Port is a Gateway listener's port.
type Port struct {
	Number   uint32 `json:"number"`
	Protocol string `json:"protocol"`
	Name     string `json:"name"`
}

// ServerTLS is a listener's TLS: terminate with a Secret's certificate, or redirect plain HTTP.
type ServerTLS struct {
	HTTPSRedirect  bool   `json:"httpsRedirect,omitempty"`
	Mode           string `json:"mode,omitempty"`
	CredentialName string `json:"credentialName,omitempty"`
}

// GatewayList is a list of Gateways.
// +kubebuilder:object:root=true
type GatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gateway `json:"items"`
}

// VirtualService routes a host's traffic arriving at gateways to a destination.
// +kubebuilder:object:root=true
type VirtualService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VirtualServiceSpec `json:"spec,omitempty"`
}

// VirtualServiceSpec binds hosts on gateways to HTTP routes.
type VirtualServiceSpec struct {
	Hosts    []string    `json:"hosts,omitempty"`
	Gateways []string    `json:"gateways,omitempty"`
	HTTP     []HTTPRoute `json:"http,omitempty"`
}

// HTTPRoute sends HTTP requests to destinations.
type HTTPRoute struct {
	Route []HTTPRouteDestination `json:"route,omitempty"`
}

// HTTPRouteDestination is one destination of an HTTPRoute.
type HTTPRouteDestination struct {
	Destination Destination `json:"destination"`
}

// Destination is a Service (by host name) and port.
type Destination struct {
	Host string        `json:"host"`
	Port *PortSelector `json:"port,omitempty"`
}

// PortSelector picks a Service port by number.
type PortSelector struct {
	Number uint32 `json:"number,omitempty"`
}

// VirtualServiceList is a list of VirtualServices.
// +kubebuilder:object:root=true
type VirtualServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualService `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Gateway{}, &GatewayList{}, &VirtualService{}, &VirtualServiceList{})
}
