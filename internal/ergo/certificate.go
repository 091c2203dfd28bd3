package ergo

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

const (
	certManagerGroup   = "cert-manager.io"
	defaultIssuerKind  = "Issuer"
	certificateKind    = "Certificate"
	certificateVersion = "v1"
)

// Certificate asks cert-manager for the certificate TLS listeners serve, written to TLSSecretName. It
// is nil when the network has no spec.tls.
func Certificate(n *ircv1.ErgoNetwork) *cmv1.Certificate {
	if n.Spec.TLS == nil {
		return nil
	}
	kind := n.Spec.TLS.IssuerRef.Kind
	if kind == "" {
		kind = defaultIssuerKind
	}
	dnsNames := append([]string(nil), n.Spec.TLS.DNSNames...)
	if len(dnsNames) == 0 {
		dnsNames = []string{n.Spec.Hostname}
	}
	return &cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: certManagerGroup + "/" + certificateVersion, Kind: certificateKind},
		ObjectMeta: objectMeta(n, CertificateName(n)),
		Spec: cmv1.CertificateSpec{
			SecretName: TLSSecretName(n),
			// cert-manager does not own the Secret it writes; the labels at least let it be found
			// (and cleaned up) by network.
			SecretTemplate: &cmv1.CertificateSecretTemplate{Labels: Labels(n)},
			IssuerRef: cmmeta.IssuerReference{
				Name:  n.Spec.TLS.IssuerRef.Name,
				Kind:  kind,
				Group: certManagerGroup,
			},
			DNSNames: dnsNames,
			// A fresh key on every renewal: a key that leaked from an old Secret stops being useful at
			// the next renewal.
			PrivateKey: &cmv1.CertificatePrivateKey{RotationPolicy: cmv1.RotationPolicyAlways},
		},
	}
}
