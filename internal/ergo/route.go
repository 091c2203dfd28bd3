package ergo

import (
	routev1 "github.com/openshift/api/route/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// Route exposes the first TLS listener through the OpenShift router with passthrough TLS: the router
// only reads SNI, and ergo terminates TLS with the cert-manager certificate. It is nil when spec.route is
// unset or no listener speaks TLS (the CRD rejects the latter).
func Route(n *ircv1.ErgoNetwork) *routev1.Route {
	if n.Spec.Route == nil {
		return nil
	}
	target, ok := tlsListenerPortName(n)
	if !ok {
		return nil
	}
	return &routev1.Route{
		TypeMeta:   metav1.TypeMeta{APIVersion: routev1.GroupVersion.String(), Kind: "Route"},
		ObjectMeta: objectMeta(n, RouteName(n)),
		Spec: routev1.RouteSpec{
			// Empty lets OpenShift generate a host; the field is omitted then, so the generated host is
			// not fought over on every apply.
			Host: n.Spec.Route.Host,
			To: routev1.RouteTargetReference{
				Kind: "Service",
				Name: ServiceName(n),
				// The server's default, written out because the field is not omitempty and would
				// otherwise serialise as null.
				Weight: ptr.To[int32](100),
			},
			Port: &routev1.RoutePort{TargetPort: intstr.FromString(target)},
			TLS: &routev1.TLSConfig{
				Termination: routev1.TLSTerminationPassthrough,
				// IRC has no plaintext-to-TLS redirect; plaintext to the route is refused.
				InsecureEdgeTerminationPolicy: routev1.InsecureEdgeTerminationPolicyNone,
			},
			WildcardPolicy: routev1.WildcardPolicyNone,
		},
	}
}
