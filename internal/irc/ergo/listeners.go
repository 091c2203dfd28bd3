package ergo

import (
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// ListenerPort returns the port of a listener address in ergo's "[host]:port" form (":6697",
// "0.0.0.0:6667", "[::]:6697").
func ListenerPort(address string) (int32, error) { return ircnet.ListenerPort(address) }

// ServicePorts lists one port per listener, in spec order (see ircnet.Ports).
func ServicePorts(n *ircv1.ErgoNetwork) []ircv1.ListenerStatus { return ircnet.Ports(n.Spec.Listeners) }

// TLSListenerPort is the first TLS listener's port: the one a Route passes TLS through to.
func TLSListenerPort(n *ircv1.ErgoNetwork) (int32, bool) {
	p, ok := ircnet.FirstTLS(ServicePorts(n))
	return p.Port, ok
}
