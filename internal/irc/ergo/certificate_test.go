package ergo

import (
	"reflect"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestCertificate(t *testing.T) {
	noTLS := referenceNetwork()
	noTLS.Spec.TLS = nil
	defaults := referenceNetwork()
	defaults.Spec.TLS = &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "local-ca"}}
	several := referenceNetwork()
	several.Spec.TLS.DNSNames = []string{"my-network.irc.now", "irc.example.com"}
	tests := []struct {
		name       string
		network    *ircv1.ErgoNetwork
		wantNil    bool
		wantIssuer cmmeta.IssuerReference
		wantDNS    []string
	}{
		{name: "no tls", network: noTLS, wantNil: true},
		{
			name:       "reference",
			network:    referenceNetwork(),
			wantIssuer: cmmeta.IssuerReference{Name: "letsencrypt-prod", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			wantDNS:    []string{"my-network.irc.now"},
		},
		{
			name:       "issuer kind and dns names default",
			network:    defaults,
			wantIssuer: cmmeta.IssuerReference{Name: "local-ca", Kind: "Issuer", Group: "cert-manager.io"},
			wantDNS:    []string{"my-network.irc.now"},
		},
		{
			name:       "several dns names",
			network:    several,
			wantIssuer: cmmeta.IssuerReference{Name: "letsencrypt-prod", Kind: "ClusterIssuer", Group: "cert-manager.io"},
			wantDNS:    []string{"my-network.irc.now", "irc.example.com"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Certificate(tt.network)
			if (c == nil) != tt.wantNil {
				t.Fatalf("Certificate = %v, want nil: %v", c, tt.wantNil)
			}
			if c == nil {
				return
			}
			if c.Name != "my-network" || c.Spec.SecretName != "my-network-tls" {
				t.Errorf("name %q secretName %q, want my-network and my-network-tls", c.Name, c.Spec.SecretName)
			}
			if c.Spec.IssuerRef != tt.wantIssuer {
				t.Errorf("issuerRef = %+v, want %+v", c.Spec.IssuerRef, tt.wantIssuer)
			}
			if !reflect.DeepEqual(c.Spec.DNSNames, tt.wantDNS) {
				t.Errorf("dnsNames = %v, want %v", c.Spec.DNSNames, tt.wantDNS)
			}
			if c.Spec.PrivateKey == nil || c.Spec.PrivateKey.RotationPolicy != cmv1.RotationPolicyAlways {
				t.Errorf("privateKey = %+v, want rotationPolicy Always", c.Spec.PrivateKey)
			}
			if c.Spec.SecretTemplate == nil || !reflect.DeepEqual(c.Spec.SecretTemplate.Labels, Labels(tt.network)) {
				t.Errorf("secretTemplate = %+v, want the network's labels", c.Spec.SecretTemplate)
			}
			// The Deployment mounts the Secret this Certificate writes.
			if !reflect.DeepEqual(c.Spec.SecretName, TLSSecretName(tt.network)) {
				t.Errorf("secretName %q is not TLSSecretName", c.Spec.SecretName)
			}
		})
	}
	// Changing the returned DNS names must not change the network.
	n := referenceNetwork()
	Certificate(n).Spec.DNSNames[0] = "changed"
	if n.Spec.TLS.DNSNames[0] != "my-network.irc.now" {
		t.Error("Certificate shares dnsNames with the spec")
	}
}
