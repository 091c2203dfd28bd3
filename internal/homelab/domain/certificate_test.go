package domain

import (
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/google/go-cmp/cmp"
)

func TestCertificate(t *testing.T) {
	tests := []struct {
		name      string
		hostname  string
		issuer    string
		gatewayNS string
		wantDNS   []string
	}{
		{"a two-label domain", "example.com", "letsencrypt", "istio-system", []string{"example.com", "*.example.com"}},
		{"a deeper domain, another namespace", "home.example.org", "internal-ca", "istio-ingress", []string{"home.example.org", "*.home.example.org"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDomain("homelab", "main")
			d.Spec.Hostname, d.Spec.Issuer = tt.hostname, tt.issuer
			c := Certificate(d, tt.gatewayNS)
			if c.Kind != "Certificate" || c.APIVersion != "cert-manager.io/v1" {
				t.Errorf("TypeMeta = %v", c.TypeMeta)
			}
			if c.Namespace != tt.gatewayNS || c.Name != ChildName(d) {
				t.Errorf("Certificate is %s/%s, want %s/%s", c.Namespace, c.Name, tt.gatewayNS, ChildName(d))
			}
			if diff := cmp.Diff(tt.wantDNS, c.Spec.DNSNames); diff != "" {
				t.Errorf("dnsNames (-want +got):\n%s", diff)
			}
			if c.Spec.IssuerRef.Name != tt.issuer || c.Spec.IssuerRef.Kind != cmv1.ClusterIssuerKind {
				t.Errorf("issuerRef = %+v, want ClusterIssuer %s", c.Spec.IssuerRef, tt.issuer)
			}
			if c.Spec.SecretName != TLSSecretName(d) {
				t.Errorf("secretName = %q", c.Spec.SecretName)
			}
			if !BelongsTo(c.Labels, d) || !BelongsTo(c.Spec.SecretTemplate.Labels, d) {
				t.Errorf("Certificate or its Secret template lacks the Domain's labels: %v, %v", c.Labels, c.Spec.SecretTemplate.Labels)
			}
			if len(c.OwnerReferences) != 0 {
				t.Errorf("a Certificate in another namespace cannot have owner references: %v", c.OwnerReferences)
			}
		})
	}
}
