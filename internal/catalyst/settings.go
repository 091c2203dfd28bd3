package catalyst

import (
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/api/resource"

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

	// The administrator's limits (limits.go): what tenants cannot change through a Project.

	// PodSecurityLevel is the Pod Security Standard environment namespaces enforce; restricted when
	// empty.
	PodSecurityLevel PodSecurityLevel
	// MaxQuota is the most a Project's resources.defaultQuota may ask for; a nil field has no ceiling.
	MaxQuota catalystv1.Quota
	// QuotaStorage is requests.storage of every environment's ResourceQuota; DefaultQuotaStorage when
	// nil.
	QuotaStorage *resource.Quantity
	// AllowedDomains are the domains a Project's ingress.domain may name besides Domain: a name allows
	// exactly itself, *.<name> allows any domain one label below name.
	AllowedDomains []string
	// AllowedClusterIssuers are the ClusterIssuers a Project's ingress.issuerRef may name besides
	// Issuer's.
	AllowedClusterIssuers []string
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
	// Quota is the namespace's CPU and memory quota.
	Quota catalystv1.Quota
	// QuotaStorage is the namespace's requests.storage quota.
	QuotaStorage resource.Quantity
	// PodSecurityLevel is the Pod Security Standard the namespace enforces.
	PodSecurityLevel PodSecurityLevel
	// Egress is what the pods may reach besides DNS.
	Egress []catalystv1.EgressRule
	// ClusterIssuers are the ClusterIssuers the environment's objects may name (the operator's and the
	// allowed ones): what its namespace's ClusterIssuersAnnotation holds for the admission policies.
	ClusterIssuers []string
}

// DefaultEgress is what environments' pods may reach besides DNS when their Project says nothing:
// TCP 443 anywhere.
func DefaultEgress() []catalystv1.EgressRule {
	return []catalystv1.EgressRule{{Ports: []catalystv1.EgressPort{{Protocol: "TCP", Port: 443}}}}
}

// SettingsFor merges a Project's spec over the operator's defaults.
func SettingsFor(p *catalystv1.Project, d Defaults) Settings {
	s := Settings{Domain: d.Domain, Issuer: d.Issuer, IngressClass: d.IngressClass, IngressNamespace: d.IngressNamespace,
		Quota: p.Spec.Resources.DefaultQuota, QuotaStorage: DefaultQuotaStorage, PodSecurityLevel: d.PodSecurityLevel.OrRestricted(),
		Egress: DefaultEgress(), ClusterIssuers: d.allowedClusterIssuers()}
	if d.QuotaStorage != nil {
		s.QuotaStorage = *d.QuotaStorage
	}
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

// SourceCacheName is the directory under the temporary directory where fetched commits are kept by
// default.
const SourceCacheName = "catalyst-source"

// DefaultCacheDir is --catalyst-cache-dir's default: SourceCacheName under $TMPDIR (/tmp when unset).
func DefaultCacheDir() string { return filepath.Join(os.TempDir(), SourceCacheName) }
