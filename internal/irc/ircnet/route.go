package ircnet

import (
	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Route exposes the first TLS port of Service serviceName through the OpenShift router with
// passthrough TLS: the router only reads SNI, and the server terminates TLS with the cert-manager
// certificate. It is nil when route is nil or no port speaks TLS (the CRDs reject the latter).
func Route(m Meta, name, serviceName string, route *ircv1.RouteSpec, ports []ircv1.ListenerStatus) *routev1.Route {
	if route == nil {
		return nil
	}
	target, ok := FirstTLS(ports)
	if !ok {
		return nil
	}
	return &routev1.Route{
		TypeMeta:   metav1.TypeMeta{APIVersion: routev1.GroupVersion.String(), Kind: "Route"},
		ObjectMeta: m.Object(name),
		Spec: routev1.RouteSpec{
			// Empty lets OpenShift generate a host; the field is omitted then, so the generated host is
			// not fought over on every apply.
			Host: route.Host,
			To: routev1.RouteTargetReference{
				Kind: "Service",
				Name: serviceName,
				// The server's default, written out because the field is not omitempty and would
				// otherwise serialise as null.
				Weight: ptr.To[int32](100),
			},
			Port: &routev1.RoutePort{TargetPort: intstr.FromString(target.Name)},
			TLS: &routev1.TLSConfig{
				Termination: routev1.TLSTerminationPassthrough,
				// IRC has no plaintext-to-TLS redirect; plaintext to the route is refused.
				InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyNone,
			},
			WildcardPolicy: routev1.WildcardPolicyNone,
		},
	}
}
