package ircnet

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

const (
	certManagerGroup  = "cert-manager.io"
	defaultIssuerKind = "Issuer"
)

// Certificate asks cert-manager for the certificate TLS listeners serve, written to Secret secretName,
// for tls.dnsNames or else hostname. It is nil when tls is nil.
func Certificate(m Meta, name, secretName, hostname string, tls *ircv1.TLSSpec) *cmv1.Certificate {
	if tls == nil {
		return nil
	}
	kind := tls.IssuerRef.Kind
	if kind == "" {
		kind = defaultIssuerKind
	}
	dnsNames := append([]string(nil), tls.DNSNames...)
	if len(dnsNames) == 0 {
		dnsNames = []string{hostname}
	}
	return &cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: certManagerGroup + "/v1", Kind: "Certificate"},
		ObjectMeta: m.Object(name),
		Spec: cmv1.CertificateSpec{
			SecretName: secretName,
			// cert-manager does not own the Secret it writes; the labels at least let it be found
			// (and cleaned up) by owner.
			SecretTemplate: &cmv1.CertificateSecretTemplate{Labels: m.Labels},
			IssuerRef: cmmeta.IssuerReference{
				Name:  tls.IssuerRef.Name,
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
