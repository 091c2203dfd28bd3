package ircnet

import (
	"fmt"
	"net"
	"strconv"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// ListenerPort returns the port of a listener address in the "[host]:port" form (":6697",
// "0.0.0.0:6667", "[::]:6697").
func ListenerPort(address string) (int32, error) {
	_, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return 0, fmt.Errorf("listener address %q: %w", address, err)
	}
	// Base 10 and 16 bits: no signs, no hex, nothing a Service port could not hold.
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return 0, fmt.Errorf("listener address %q: port %q is not a number between 1 and 65535", address, portStr)
	}
	return int32(port), nil
}

// PortName names a listener's Service and container port. IANA_SVC_NAME allows 15 characters, and
// "ircs-65535" is the longest this can produce.
func PortName(port int32, tls bool) string {
	if tls {
		return "ircs-" + strconv.Itoa(int(port))
	}
	return "irc-" + strconv.Itoa(int(port))
}

// Ports lists one port per listener, in spec order. Listeners whose address does not parse, or whose
// port an earlier listener already took, are left out: the CRDs reject both, and a Service with a broken
// or duplicate port would be refused as a whole.
func Ports(listeners []ircv1.Listener) []ircv1.ListenerStatus {
	var ports []ircv1.ListenerStatus
	seen := map[int32]bool{}
	for _, l := range listeners {
		port, err := ListenerPort(l.Address)
		if err != nil || seen[port] {
			continue
		}
		seen[port] = true
		ports = append(ports, ircv1.ListenerStatus{Name: PortName(port, l.TLS), Port: port, TLS: l.TLS})
	}
	return ports
}

// FirstTLS is the first TLS port among ports: the one a Route passes TLS through to.
func FirstTLS(ports []ircv1.ListenerStatus) (ircv1.ListenerStatus, bool) {
	for _, p := range ports {
		if p.TLS {
			return p, true
		}
	}
	return ircv1.ListenerStatus{}, false
}

// ProbePort is the container port probes connect to: the first plaintext port, else the first port. A
// TCP probe speaks neither IRC nor TLS, so any listener proves the same thing: the server loaded its
// config and bound its sockets.
func ProbePort(ports []ircv1.ListenerStatus) (string, bool) {
	for _, p := range ports {
		if !p.TLS {
			return p.Name, true
		}
	}
	if len(ports) > 0 {
		return ports[0].Name, true
	}
	return "", false
}
