package ircnet

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestPorts(t *testing.T) {
	tests := []struct {
		name      string
		listeners []ircv1.Listener
		want      []ircv1.ListenerStatus
		firstTLS  string
		probe     string
	}{
		{name: "none"},
		{name: "plain and tls", listeners: []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: "[::]:6667"}},
			want:     []ircv1.ListenerStatus{{Name: "ircs-6697", Port: 6697, TLS: true}, {Name: "irc-6667", Port: 6667}},
			firstTLS: "ircs-6697", probe: "irc-6667"},
		{name: "tls only", listeners: []ircv1.Listener{{Address: "0.0.0.0:6697", TLS: true}},
			want: []ircv1.ListenerStatus{{Name: "ircs-6697", Port: 6697, TLS: true}}, firstTLS: "ircs-6697", probe: "ircs-6697"},
		{name: "broken and duplicate left out", listeners: []ircv1.Listener{{Address: "6667"}, {Address: ":6667"}, {Address: "0.0.0.0:6667", TLS: true}, {Address: ":0"}},
			want: []ircv1.ListenerStatus{{Name: "irc-6667", Port: 6667}}, probe: "irc-6667"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ports(tt.listeners)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Ports = %+v, want %+v", got, tt.want)
			}
			if p, ok := FirstTLS(got); p.Name != tt.firstTLS || ok != (tt.firstTLS != "") {
				t.Errorf("FirstTLS = %+v, %v; want %q", p, ok, tt.firstTLS)
			}
			if p, ok := ProbePort(got); p != tt.probe || ok != (tt.probe != "") {
				t.Errorf("ProbePort = %q, %v; want %q", p, ok, tt.probe)
			}
		})
	}
}

func TestChildren(t *testing.T) {
	m := Meta{Namespace: "ns", Labels: map[string]string{"a": "b", "c": "d"}, Selector: map[string]string{"a": "b"},
		Owner: metav1.OwnerReference{Kind: "SojuBouncer", Name: "x", UID: "u"}}
	ports := Ports([]ircv1.Listener{{Address: ":6697", TLS: true}, {Address: ":6667"}})

	svc := Service(m, "svc", ports)
	if svc.Namespace != "ns" || svc.Name != "svc" || !reflect.DeepEqual(svc.Spec.Selector, m.Selector) ||
		len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].TargetPort.StrVal != "ircs-6697" || svc.OwnerReferences[0].UID != "u" {
		t.Errorf("Service = %+v", svc)
	}

	if Certificate(m, "c", "c-tls", "h.example.com", nil) != nil {
		t.Error("Certificate without tls is not nil")
	}
	cert := Certificate(m, "c", "c-tls", "h.example.com", &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "le"}})
	if cert.Spec.SecretName != "c-tls" || cert.Spec.IssuerRef.Kind != "Issuer" || !reflect.DeepEqual(cert.Spec.DNSNames, []string{"h.example.com"}) ||
		!reflect.DeepEqual(cert.Spec.SecretTemplate.Labels, m.Labels) {
		t.Errorf("Certificate = %+v", cert.Spec)
	}
	cert = Certificate(m, "c", "c-tls", "h.example.com", &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "le", Kind: "ClusterIssuer"}, DNSNames: []string{"*.example.com"}})
	if cert.Spec.IssuerRef.Kind != "ClusterIssuer" || !reflect.DeepEqual(cert.Spec.DNSNames, []string{"*.example.com"}) {
		t.Errorf("Certificate with dnsNames = %+v", cert.Spec)
	}

	if Route(m, "r", "svc", nil, ports) != nil {
		t.Error("Route without spec.route is not nil")
	}
	if Route(m, "r", "svc", &ircv1.RouteSpec{}, ports[1:]) != nil {
		t.Error("Route without a TLS port is not nil")
	}
	rt := Route(m, "r", "svc", &ircv1.RouteSpec{Host: "h.example.com"}, ports)
	if rt.Spec.To.Name != "svc" || rt.Spec.Port.TargetPort.StrVal != "ircs-6697" || rt.Spec.Host != "h.example.com" || rt.Spec.TLS.Termination != "passthrough" {
		t.Errorf("Route = %+v", rt.Spec)
	}
}
