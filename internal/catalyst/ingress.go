package catalyst

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

const (
	// IngressName names the Ingress in an environment's namespace.
	IngressName = "catalyst"
	// CertificateName names the cert-manager Certificate, and TLSSecretName the Secret it writes.
	CertificateName = "catalyst-tls"
	// TLSSecretName is the Secret holding the environment's certificate and key.
	TLSSecretName = "catalyst-tls"
	// ServiceName and ServicePort are the Service the Ingress sends traffic to: the application's
	// deployment (a later version of the operator, or the user) provides a Service "app" with a port
	// named "http".
	ServiceName = "app"
	// ServicePort is the name of the Service port the Ingress sends traffic to.
	ServicePort = "http"
)

// Certificate asks cert-manager for the environment host's certificate, signed by s.Issuer; nil when
// no issuer is configured. The operator makes the Certificate itself rather than annotating the Ingress
// for cert-manager's ingress-shim, so that it owns (labels, watches and reads) the object whose Ready
// condition status.url waits for.
func Certificate(env *catalystv1.Environment, ns, host string, s Settings) *cmv1.Certificate {
	if s.Issuer.Name == "" {
		return nil
	}
	labels := objectMeta(env, ns, "").Labels
	return &cmv1.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cert-manager.io/v1", Kind: "Certificate"},
		ObjectMeta: objectMeta(env, ns, CertificateName),
		Spec: cmv1.CertificateSpec{
			SecretName:     TLSSecretName,
			SecretTemplate: &cmv1.CertificateSecretTemplate{Labels: labels},
			IssuerRef:      cmmeta.IssuerReference{Name: s.Issuer.Name, Kind: s.Issuer.Kind, Group: "cert-manager.io"},
			DNSNames:       []string{host},
			PrivateKey:     &cmv1.CertificatePrivateKey{RotationPolicy: cmv1.RotationPolicyAlways},
		},
	}
}

// Ingress routes host to the environment's Service, with TLS from TLSSecretName when tls is true.
func Ingress(env *catalystv1.Environment, ns, host string, s Settings, tls bool) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: objectMeta(env, ns, IngressName),
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: ServiceName, Port: networkingv1.ServiceBackendPort{Name: ServicePort},
						}},
					}},
				}},
			}},
		},
	}
	if s.IngressClass != "" {
		ing.Spec.IngressClassName = ptr.To(s.IngressClass)
	}
	if tls {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: TLSSecretName}}
	}
	return ing
}

// URL is the environment's public address.
func URL(host string, tls bool) string {
	if tls {
		return "https://" + host
	}
	return "http://" + host
}
