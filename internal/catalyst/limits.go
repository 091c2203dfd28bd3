package catalyst

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// The operator flags that bound what a Project may ask for (main.go binds them; docs/catalyst.md,
// "Operator flags"). Tenants edit Projects; only the administrator sets these.
const (
	FlagPodSecurityLevel      = "catalyst-pod-security-level"
	FlagMaxQuotaCPU           = "catalyst-max-quota-cpu"
	FlagMaxQuotaMemory        = "catalyst-max-quota-memory"
	FlagQuotaStorage          = "catalyst-quota-storage"
	FlagAllowedDomains        = "catalyst-allowed-domains"
	FlagAllowedClusterIssuers = "catalyst-allowed-cluster-issuers"
	// FlagDomain and FlagClusterIssuer are the defaults' flags, which are always allowed.
	FlagDomain        = "catalyst-preview-domain"
	FlagClusterIssuer = "catalyst-cluster-issuer"
)

// LimitFlags are the limit flags' values as given on the command line.
type LimitFlags struct {
	// PodSecurityLevel is --catalyst-pod-security-level: privileged, baseline or restricted.
	PodSecurityLevel string
	// MaxQuotaCPU and MaxQuotaMemory are --catalyst-max-quota-cpu and --catalyst-max-quota-memory:
	// quantities, or empty for no ceiling.
	MaxQuotaCPU, MaxQuotaMemory string
	// QuotaStorage is --catalyst-quota-storage: a quantity, or empty for DefaultQuotaStorage.
	QuotaStorage string
	// AllowedDomains and AllowedClusterIssuers are --catalyst-allowed-domains and
	// --catalyst-allowed-cluster-issuers: comma-separated lists.
	AllowedDomains, AllowedClusterIssuers string
}

// WithLimits is d with the limits f gives, checked once at start so that a mistyped flag stops the
// operator instead of leaving a limit off. The error names the flag.
func (d Defaults) WithLimits(f LimitFlags) (Defaults, error) {
	level, err := ParsePodSecurityLevel(f.PodSecurityLevel)
	if err != nil {
		return d, fmt.Errorf("--%s: %w", FlagPodSecurityLevel, err)
	}
	d.PodSecurityLevel = level
	if d.MaxQuota.CPU, err = positiveQuantity(FlagMaxQuotaCPU, f.MaxQuotaCPU); err != nil {
		return d, err
	}
	if d.MaxQuota.Memory, err = positiveQuantity(FlagMaxQuotaMemory, f.MaxQuotaMemory); err != nil {
		return d, err
	}
	d.QuotaStorage = nil
	if f.QuotaStorage != "" {
		q, err := resource.ParseQuantity(f.QuotaStorage)
		if err != nil || q.Sign() < 0 {
			return d, fmt.Errorf("--%s: %q is not a quantity of zero or more, such as 20Gi", FlagQuotaStorage, f.QuotaStorage)
		}
		d.QuotaStorage = &q
	}
	d.AllowedDomains = nil
	for _, s := range splitList(f.AllowedDomains) {
		domain := strings.ToLower(s)
		base, wildcard := strings.CutPrefix(domain, "*.")
		if errs := validation.IsDNS1123Subdomain(base); len(errs) > 0 || (!strings.Contains(base, ".") && !wildcard) {
			return d, fmt.Errorf("--%s: %q is not a DNS name with a dot, or *. and a DNS name", FlagAllowedDomains, s)
		}
		d.AllowedDomains = append(d.AllowedDomains, domain)
	}
	d.AllowedClusterIssuers = nil
	for _, s := range splitList(f.AllowedClusterIssuers) {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return d, fmt.Errorf("--%s: %q is not a ClusterIssuer name: %s", FlagAllowedClusterIssuers, s, strings.Join(errs, "; "))
		}
		d.AllowedClusterIssuers = append(d.AllowedClusterIssuers, s)
	}
	return d, nil
}

// positiveQuantity parses a ceiling flag: nil when empty.
func positiveQuantity(flag, s string) (*resource.Quantity, error) {
	if s == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return nil, fmt.Errorf("--%s: %q is not a positive quantity", flag, s)
	}
	return &q, nil
}

// splitList is a comma-separated flag's items, trimmed, without empty ones.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Violation is one way a Project oversteps the administrator's limits.
type Violation struct {
	// Field is the Project's field at fault, such as spec.resources.defaultQuota.cpu.
	Field string
	// Value is the field's value as the message shows it.
	Value string
	// Rule is what the value breaks, with the flag that sets it.
	Rule string
}

func (v Violation) Error() string { return v.Field + " " + v.Value + " " + v.Rule }

// Violations are every way a Project oversteps the limits; CheckProject's error.
type Violations []Violation

func (vs Violations) Error() string {
	msgs := make([]string, len(vs))
	for i, v := range vs {
		msgs[i] = v.Error()
	}
	return strings.Join(msgs, "; ")
}

// CheckProject says whether p stays within the administrator's limits in d: its defaultQuota at most
// the ceilings (the quota it gets, so an unset field counts as its default), its ingress domain one
// d allows, and its issuer an Issuer in the environment's namespace or a ClusterIssuer d allows. The
// error is a Violations listing every field at fault; nil when there is none. The Environment controller
// runs it before making anything from the Project.
func CheckProject(p *catalystv1.Project, d Defaults) error {
	var vs Violations
	cpu, memory := quotaOf(p.Spec.Resources.DefaultQuota)
	for _, c := range []struct {
		field, flag string
		set         bool
		value       resource.Quantity
		ceiling     *resource.Quantity
	}{
		{"cpu", FlagMaxQuotaCPU, p.Spec.Resources.DefaultQuota.CPU != nil, cpu, d.MaxQuota.CPU},
		{"memory", FlagMaxQuotaMemory, p.Spec.Resources.DefaultQuota.Memory != nil, memory, d.MaxQuota.Memory},
	} {
		if c.ceiling == nil || c.value.Cmp(*c.ceiling) <= 0 {
			continue
		}
		value := c.value.String()
		if !c.set {
			value += " (the default)"
		}
		vs = append(vs, Violation{Field: "spec.resources.defaultQuota." + c.field, Value: value,
			Rule: fmt.Sprintf("is above the operator's ceiling %s (--%s)", c.ceiling.String(), c.flag)})
	}
	if in := p.Spec.Ingress; in != nil {
		if in.Domain != "" && !d.domainAllowed(in.Domain) {
			vs = append(vs, Violation{Field: "spec.ingress.domain", Value: fmt.Sprintf("%q", in.Domain),
				Rule: fmt.Sprintf("is not an allowed domain: allowed are %s (--%s, --%s; *.name allows one label below name)",
					strings.Join(d.allowedDomains(), ", "), FlagDomain, FlagAllowedDomains)})
		}
		if r := in.IssuerRef; r != nil {
			switch r.Kind {
			case "Issuer":
				// Namespaced: it lives in the environment's own namespace, where only that environment's
				// certificates can use it.
			case "", "ClusterIssuer":
				if !d.clusterIssuerAllowed(r.Name) {
					allowed := "none"
					if names := d.allowedClusterIssuers(); len(names) > 0 {
						allowed = strings.Join(names, ", ")
					}
					vs = append(vs, Violation{Field: "spec.ingress.issuerRef.name", Value: fmt.Sprintf("%q", r.Name),
						Rule: fmt.Sprintf("is not an allowed ClusterIssuer: allowed are %s (--%s, --%s); an Issuer in the environment's namespace is always allowed",
							allowed, FlagClusterIssuer, FlagAllowedClusterIssuers)})
				}
			default:
				vs = append(vs, Violation{Field: "spec.ingress.issuerRef.kind", Value: fmt.Sprintf("%q", r.Kind),
					Rule: "is neither Issuer nor ClusterIssuer"})
			}
		}
	}
	if len(vs) == 0 {
		return nil
	}
	return vs
}

// allowedDomains are the operator's domain and the allowed ones, as the message lists them.
func (d Defaults) allowedDomains() []string {
	var out []string
	if d.Domain != "" {
		out = append(out, d.Domain)
	}
	return append(out, d.AllowedDomains...)
}

// domainAllowed says whether a Project may name domain: the operator's own, one of AllowedDomains,
// or one label below a *.name of them. The comparison is exact: the CRD admits only lowercase domains,
// and the host is made from the domain as written.
func (d Defaults) domainAllowed(domain string) bool {
	for _, a := range d.allowedDomains() {
		if base, ok := strings.CutPrefix(a, "*."); ok {
			label, found := strings.CutSuffix(domain, "."+base)
			if found && label != "" && !strings.Contains(label, ".") {
				return true
			}
		} else if domain == a {
			return true
		}
	}
	return false
}

// allowedClusterIssuers are the operator's ClusterIssuer and the allowed ones.
func (d Defaults) allowedClusterIssuers() []string {
	var out []string
	if d.Issuer.Name != "" && (d.Issuer.Kind == "" || d.Issuer.Kind == "ClusterIssuer") {
		out = append(out, d.Issuer.Name)
	}
	return append(out, d.AllowedClusterIssuers...)
}

// clusterIssuerAllowed says whether a Project may name the ClusterIssuer name.
func (d Defaults) clusterIssuerAllowed(name string) bool {
	return slices.Contains(d.allowedClusterIssuers(), name)
}
