package catalyst

import (
	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// Defaults are the operator-wide settings a Project may override (main.go's --catalyst-* flags).
type Defaults struct {
	// Domain is the DNS domain environment hosts are made under.
	Domain string
	// Issuer is the cert-manager issuer of the environments' certificates; no Certificate and no TLS
	// when its name is empty and the Project names none.
	Issuer catalystv1.IssuerRef
	// IngressClass is the IngressClass of the environments' Ingresses; the cluster's default when empty.
	IngressClass string
	// IngressNamespace is the namespace of the ingress controller, whose pods may reach every
	// environment's pods.
	IngressNamespace string
}

// DefaultDomain, DefaultIngressNamespace and DefaultIssuerName are the flags' defaults.
const (
	DefaultDomain           = "preview.catalyst.dev"
	DefaultIngressNamespace = "ingress-nginx"
	DefaultIssuerName       = "letsencrypt"
)

// Settings are what one environment gets, its Project's choices over the operator's defaults.
type Settings struct {
	// Domain is the DNS domain of the environment's host.
	Domain string
	// Issuer signs the environment's certificate; an empty name means no TLS.
	Issuer catalystv1.IssuerRef
	// IngressClass is the environment's IngressClass; the cluster's default when empty.
	IngressClass string
	// IngressNamespace is where the ingress controller runs.
	IngressNamespace string
	// Quota is the namespace's ResourceQuota.
	Quota catalystv1.Quota
	// Egress is what the pods may reach besides DNS.
	Egress []catalystv1.EgressRule
}

// DefaultEgress is what environments' pods may reach besides DNS when their Project says nothing:
// TCP 443 anywhere.
func DefaultEgress() []catalystv1.EgressRule {
	return []catalystv1.EgressRule{{Ports: []catalystv1.EgressPort{{Protocol: "TCP", Port: 443}}}}
}

// SettingsFor merges a Project's spec over the operator's defaults.
func SettingsFor(p *catalystv1.Project, d Defaults) Settings {
	s := Settings{Domain: d.Domain, Issuer: d.Issuer, IngressClass: d.IngressClass, IngressNamespace: d.IngressNamespace,
		Quota: p.Spec.Resources.DefaultQuota, Egress: DefaultEgress()}
	if s.Issuer.Name != "" && s.Issuer.Kind == "" {
		s.Issuer.Kind = "ClusterIssuer"
	}
	if in := p.Spec.Ingress; in != nil {
		if in.Domain != "" {
			s.Domain = in.Domain
		}
		if in.IssuerRef != nil {
			s.Issuer = *in.IssuerRef
			if s.Issuer.Kind == "" {
				s.Issuer.Kind = "ClusterIssuer"
			}
		}
		if in.ClassName != "" {
			s.IngressClass = in.ClassName
		}
	}
	if np := p.Spec.NetworkPolicy; np != nil && len(np.Egress) > 0 {
		s.Egress = np.Egress
	}
	return s
}
