package soju

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// Ports are the Service ports, one per listener.
func Ports(b *ircv1.SojuBouncer) []ircv1.ListenerStatus { return ircnet.Ports(b.Spec.Listeners) }

// Service exposes every listener inside the cluster (ircnet.Service), and the metrics endpoint when b
// enables it (port "metrics", which Ports leaves out: clients do not connect to it).
func Service(b *ircv1.SojuBouncer) *corev1.Service {
	s := ircnet.Service(ChildMeta(b), ServiceName(b), Ports(b))
	if p := metricsServicePort(b); p != nil {
		s.Spec.Ports = append(s.Spec.Ports, *p)
	}
	return s
}

// Certificate asks cert-manager for the certificate TLS listeners serve; nil without spec.tls.
func Certificate(b *ircv1.SojuBouncer) *cmv1.Certificate {
	return ircnet.Certificate(ChildMeta(b), CertificateName(b), TLSSecretName(b), b.Spec.Hostname, b.Spec.TLS)
}

// Route passes the first TLS listener through the OpenShift router; nil without spec.route.
func Route(b *ircv1.SojuBouncer) *routev1.Route {
	return ircnet.Route(ChildMeta(b), RouteName(b), ServiceName(b), b.Spec.Route, Ports(b))
}
