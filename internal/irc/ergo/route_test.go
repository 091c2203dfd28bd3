package ergo

import (
	"testing"

	routev1 "github.com/openshift/api/route/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestRoute(t *testing.T) {
	noRoute := referenceNetwork()
	noRoute.Spec.Route = nil
	noHost := referenceNetwork()
	noHost.Spec.Route.Host = ""
	tlsSecond := referenceNetwork()
	tlsSecond.Spec.Listeners = []ircv1.Listener{{Address: ":6667"}, {Address: ":7000", TLS: true}, {Address: ":6697", TLS: true}}
	noTLSListener := referenceNetwork()
	noTLSListener.Spec.Listeners = []ircv1.Listener{{Address: ":6667"}}
	tests := []struct {
		name       string
		network    *ircv1.ErgoNetwork
		wantNil    bool
		wantHost   string
		wantTarget string
	}{
		{name: "no route", network: noRoute, wantNil: true},
		{name: "no tls listener", network: noTLSListener, wantNil: true},
		{name: "reference", network: referenceNetwork(), wantHost: "my-network.irc.now", wantTarget: "ircs-6697"},
		{name: "generated host", network: noHost, wantTarget: "ircs-6697"},
		{name: "first tls listener", network: tlsSecond, wantHost: "my-network.irc.now", wantTarget: "ircs-7000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Route(tt.network)
			if (r == nil) != tt.wantNil {
				t.Fatalf("Route = %v, want nil: %v", r, tt.wantNil)
			}
			if r == nil {
				return
			}
			if r.Spec.Host != tt.wantHost {
				t.Errorf("host = %q, want %q", r.Spec.Host, tt.wantHost)
			}
			if r.Spec.To.Kind != "Service" || r.Spec.To.Name != ServiceName(tt.network) {
				t.Errorf("to = %+v, want Service %s", r.Spec.To, ServiceName(tt.network))
			}
			if r.Spec.Port == nil || r.Spec.Port.TargetPort.StrVal != tt.wantTarget {
				t.Errorf("port = %+v, want target port %s", r.Spec.Port, tt.wantTarget)
			}
			if r.Spec.TLS == nil || r.Spec.TLS.Termination != routev1.TLSTerminationPassthrough ||
				r.Spec.TLS.InsecureEdgeTerminationPolicy != routev1.InsecureEdgeTerminationPolicyNone {
				t.Errorf("tls = %+v, want passthrough with insecure traffic refused", r.Spec.TLS)
			}
			// Passthrough routes carry no certificate: ergo presents cert-manager's.
			if tls := r.Spec.TLS; tls != nil && (tls.Certificate != "" || tls.Key != "" || tls.CACertificate != "" || tls.DestinationCACertificate != "") {
				t.Error("passthrough route carries certificate material")
			}
			if r.Spec.WildcardPolicy != routev1.WildcardPolicyNone {
				t.Errorf("wildcardPolicy = %s, want None", r.Spec.WildcardPolicy)
			}
			// The target port must exist on the Service.
			found := false
			for _, p := range Service(tt.network).Spec.Ports {
				found = found || p.Name == r.Spec.Port.TargetPort.StrVal
			}
			if !found {
				t.Errorf("route targets port %s, which the Service does not have", r.Spec.Port.TargetPort.StrVal)
			}
		})
	}
}
