package domain

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

// Certificate asks cert-manager, through the ClusterIssuer spec.issuer, for a certificate covering the
// hostname and every name one label below it. It lives in the gateway namespace, where the Gateway can
// read its Secret; the Secret is labelled like the Certificate so that deleting the Domain finds it.
func Certificate(d *homelabv1.Domain, gatewayNamespace string) *cmv1.Certificate {
	return &cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmv1.SchemeGroupVersion.String(), Kind: cmv1.CertificateKind},
		ObjectMeta: metav1.ObjectMeta{Name: ChildName(d), Namespace: gatewayNamespace, Labels: Labels(d)},
		Spec: cmv1.CertificateSpec{
			SecretName:     TLSSecretName(d),
			SecretTemplate: &cmv1.CertificateSecretTemplate{Labels: Labels(d)},
			DNSNames:       Hosts(d),
			IssuerRef:      cmmeta.ObjectReference{Name: d.Spec.Issuer, Kind: cmv1.ClusterIssuerKind, Group: "cert-manager.io"},
		},
	}
}

// Hosts are the names the Domain serves: its hostname and the one-label wildcard below it.
func Hosts(d *homelabv1.Domain) []string {
	return []string{d.Spec.Hostname, "*." + d.Spec.Hostname}
}
