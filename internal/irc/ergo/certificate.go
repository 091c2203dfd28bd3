package ergo

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
)

// Certificate asks cert-manager for the certificate TLS listeners serve, written to TLSSecretName. It
// is nil when the network has no spec.tls.
func Certificate(n *ircv1.ErgoNetwork) *cmv1.Certificate {
	return ircnet.Certificate(childMeta(n), CertificateName(n), TLSSecretName(n), n.Spec.Hostname, n.Spec.TLS)
}
