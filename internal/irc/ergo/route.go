package ergo

import (
	routev1 "github.com/openshift/api/route/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// Route exposes the first TLS listener through the OpenShift router with passthrough TLS: the router
// only reads SNI, and ergo terminates TLS with the cert-manager certificate. It is nil when spec.route is
// unset or no listener speaks TLS (the CRD rejects the latter).
func Route(n *ircv1.ErgoNetwork) *routev1.Route {
	return ircnet.Route(childMeta(n), RouteName(n), ServiceName(n), n.Spec.Route, ServicePorts(n))
}
