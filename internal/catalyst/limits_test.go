package catalyst

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

func TestParsePodSecurityLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    PodSecurityLevel
		wantErr bool
	}{
		{"privileged", PodSecurityPrivileged, false},
		{"baseline", PodSecurityBaseline, false},
		{"restricted", PodSecurityRestricted, false},
		{"", "", true},
		{"Restricted", "", true},
		{"restricted ", "", true},
		{"none", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePodSecurityLevel(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParsePodSecurityLevel(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNamespacePodSecurityLevel(t *testing.T) {
	env, _ := fixture()
	tests := []struct {
		name  string
		level PodSecurityLevel
		want  string
	}{
		{"restricted", PodSecurityRestricted, "restricted"},
		{"baseline", PodSecurityBaseline, "baseline"},
		{"privileged", PodSecurityPrivileged, "privileged"},
		// An unset or unknown level fails closed.
		{"unset", "", "restricted"},
		{"unknown", "anything", "restricted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := NamespaceFor(env, PartsOf(env), "ns", Settings{PodSecurityLevel: tt.level})
			want := map[string]string{
				"pod-security.kubernetes.io/enforce":         tt.want,
				"pod-security.kubernetes.io/enforce-version": "latest",
				"pod-security.kubernetes.io/audit":           "restricted",
				"pod-security.kubernetes.io/warn":            "restricted",
			}
			for k, v := range want {
				if ns.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, ns.Labels[k], v)
				}
			}
		})
	}
	t.Run("SettingsFor carries the operator's level", func(t *testing.T) {
		_, p := fixture()
		for _, tt := range tests {
			if got := SettingsFor(p, Defaults{PodSecurityLevel: tt.level}).PodSecurityLevel; got != PodSecurityLevel(tt.want) {
				t.Errorf("level %q: settings say %q, want %q", tt.level, got, tt.want)
			}
		}
	})
}

func TestWithLimits(t *testing.T) {
	base := Defaults{Domain: DefaultDomain, Issuer: catalystv1.IssuerRef{Name: DefaultIssuerName, Kind: "ClusterIssuer"}}
	valid := LimitFlags{PodSecurityLevel: "restricted"}
	tests := []struct {
		name    string
		f       func(*LimitFlags)
		check   func(t *testing.T, d Defaults)
		wantErr string
	}{
		{name: "nothing but the level", f: func(*LimitFlags) {}, check: func(t *testing.T, d Defaults) {
			if d.MaxQuota.CPU != nil || d.MaxQuota.Memory != nil || d.QuotaStorage != nil || d.AllowedDomains != nil || d.AllowedClusterIssuers != nil {
				t.Errorf("empty flags set limits: %+v", d)
			}
			if d.PodSecurityLevel != PodSecurityRestricted || d.Domain != DefaultDomain {
				t.Errorf("defaults lost: %+v", d)
			}
		}},
		{name: "everything", f: func(f *LimitFlags) {
			*f = LimitFlags{PodSecurityLevel: "baseline", MaxQuotaCPU: "8", MaxQuotaMemory: "16Gi", QuotaStorage: "0",
				AllowedDomains: " apps.example.com, *.Preview.Example.org ,", AllowedClusterIssuers: "prod,staging"}
		}, check: func(t *testing.T, d Defaults) {
			if d.PodSecurityLevel != PodSecurityBaseline || d.MaxQuota.CPU.String() != "8" || d.MaxQuota.Memory.String() != "16Gi" ||
				d.QuotaStorage == nil || !d.QuotaStorage.IsZero() {
				t.Errorf("limits %+v", d)
			}
			if strings.Join(d.AllowedDomains, ",") != "apps.example.com,*.preview.example.org" {
				t.Errorf("allowed domains %q", d.AllowedDomains)
			}
			if strings.Join(d.AllowedClusterIssuers, ",") != "prod,staging" {
				t.Errorf("allowed issuers %q", d.AllowedClusterIssuers)
			}
		}},
		{name: "no level", f: func(f *LimitFlags) { f.PodSecurityLevel = "" }, wantErr: "--catalyst-pod-security-level"},
		{name: "unknown level", f: func(f *LimitFlags) { f.PodSecurityLevel = "open" }, wantErr: "--catalyst-pod-security-level"},
		{name: "cpu not a quantity", f: func(f *LimitFlags) { f.MaxQuotaCPU = "lots" }, wantErr: "--catalyst-max-quota-cpu"},
		{name: "cpu zero", f: func(f *LimitFlags) { f.MaxQuotaCPU = "0" }, wantErr: "--catalyst-max-quota-cpu"},
		{name: "memory negative", f: func(f *LimitFlags) { f.MaxQuotaMemory = "-1Gi" }, wantErr: "--catalyst-max-quota-memory"},
		{name: "storage negative", f: func(f *LimitFlags) { f.QuotaStorage = "-1" }, wantErr: "--catalyst-quota-storage"},
		{name: "storage not a quantity", f: func(f *LimitFlags) { f.QuotaStorage = "big" }, wantErr: "--catalyst-quota-storage"},
		{name: "domain without a dot", f: func(f *LimitFlags) { f.AllowedDomains = "localhost" }, wantErr: "--catalyst-allowed-domains"},
		{name: "bare wildcard", f: func(f *LimitFlags) { f.AllowedDomains = "*" }, wantErr: "--catalyst-allowed-domains"},
		{name: "wildcard in the middle", f: func(f *LimitFlags) { f.AllowedDomains = "a.*.example.com" }, wantErr: "--catalyst-allowed-domains"},
		{name: "two wildcards", f: func(f *LimitFlags) { f.AllowedDomains = "*.*.example.com" }, wantErr: "--catalyst-allowed-domains"},
		{name: "domain with a scheme", f: func(f *LimitFlags) { f.AllowedDomains = "https://example.com" }, wantErr: "--catalyst-allowed-domains"},
		{name: "issuer not a name", f: func(f *LimitFlags) { f.AllowedClusterIssuers = "Prod Issuer" }, wantErr: "--catalyst-allowed-cluster-issuers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := valid
			tt.f(&f)
			d, err := base.WithLimits(f)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			tt.check(t, d)
		})
	}
}

func TestCheckProject(t *testing.T) {
	d := Defaults{Domain: "preview.example.com", Issuer: catalystv1.IssuerRef{Name: "letsencrypt", Kind: "ClusterIssuer"},
		MaxQuota:       catalystv1.Quota{CPU: ptr.To(resource.MustParse("8")), Memory: ptr.To(resource.MustParse("16Gi"))},
		AllowedDomains: []string{"apps.example.com", "*.teams.example.org"}, AllowedClusterIssuers: []string{"staging"}}
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	ingress := func(domain, issuer, kind string) *catalystv1.ProjectIngress {
		in := &catalystv1.ProjectIngress{Domain: domain}
		if issuer != "" {
			in.IssuerRef = &catalystv1.IssuerRef{Name: issuer, Kind: kind}
		}
		return in
	}
	tests := []struct {
		name     string
		d        Defaults
		quota    catalystv1.Quota
		ingress  *catalystv1.ProjectIngress
		want     []string // the Violations' fields, in order
		wantText string
	}{
		// Positive controls: the same Projects as the hostile ones below, within the limits.
		{name: "defaults", d: d},
		{name: "at the ceilings", d: d, quota: catalystv1.Quota{CPU: q("8"), Memory: q("16Gi")}},
		{name: "under the ceilings", d: d, quota: catalystv1.Quota{CPU: q("500m"), Memory: q("1Gi")}},
		{name: "no ceiling", d: Defaults{}, quota: catalystv1.Quota{CPU: q("64"), Memory: q("1Ti")}},
		{name: "the operator's domain", d: d, ingress: ingress("preview.example.com", "", "")},
		{name: "an allowed domain", d: d, ingress: ingress("apps.example.com", "", "")},
		{name: "one label under a wildcard", d: d, ingress: ingress("blue.teams.example.org", "", "")},
		{name: "the operator's ClusterIssuer", d: d, ingress: ingress("", "letsencrypt", "ClusterIssuer")},
		{name: "an allowed ClusterIssuer", d: d, ingress: ingress("", "staging", "ClusterIssuer")},
		{name: "an allowed ClusterIssuer without a kind", d: d, ingress: ingress("", "staging", "")},
		{name: "any namespaced Issuer", d: d, ingress: ingress("", "my-own", "Issuer")},

		// Hostile: over the ceilings.
		{name: "cpu above", d: d, quota: catalystv1.Quota{CPU: q("64")}, want: []string{"spec.resources.defaultQuota.cpu"},
			wantText: "spec.resources.defaultQuota.cpu 64 is above the operator's ceiling 8 (--catalyst-max-quota-cpu)"},
		{name: "cpu just above", d: d, quota: catalystv1.Quota{CPU: q("8001m")}, want: []string{"spec.resources.defaultQuota.cpu"}},
		{name: "memory above", d: d, quota: catalystv1.Quota{Memory: q("17Gi")}, want: []string{"spec.resources.defaultQuota.memory"},
			wantText: "spec.resources.defaultQuota.memory 17Gi is above the operator's ceiling 16Gi (--catalyst-max-quota-memory)"},
		{name: "memory above in other units", d: d, quota: catalystv1.Quota{Memory: q("17180000000")}, want: []string{"spec.resources.defaultQuota.memory"}},
		{name: "a ceiling under the default", d: Defaults{MaxQuota: catalystv1.Quota{CPU: q("500m")}},
			want: []string{"spec.resources.defaultQuota.cpu"}, wantText: "cpu 1 (the default) is above the operator's ceiling 500m"},

		// Hostile: domains.
		{name: "another domain", d: d, ingress: ingress("evil.example.net", "", ""), want: []string{"spec.ingress.domain"},
			wantText: `spec.ingress.domain "evil.example.net" is not an allowed domain: allowed are preview.example.com, apps.example.com, *.teams.example.org`},
		{name: "a subdomain of an exact entry", d: d, ingress: ingress("x.apps.example.com", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "a subdomain of the operator's domain", d: d, ingress: ingress("x.preview.example.com", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "the wildcard's own base", d: d, ingress: ingress("teams.example.org", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "two labels under a wildcard", d: d, ingress: ingress("a.b.teams.example.org", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "a suffix without a dot", d: d, ingress: ingress("evilapps.example.com", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "a lookalike of the wildcard", d: d, ingress: ingress("x.evilteams.example.org", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "an allowed domain as a prefix", d: d, ingress: ingress("apps.example.com.evil.net", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "case", d: d, ingress: ingress("Apps.Example.com", "", ""), want: []string{"spec.ingress.domain"}},
		{name: "trailing dot", d: d, ingress: ingress("apps.example.com.", "", ""), want: []string{"spec.ingress.domain"}},

		// Hostile: issuers.
		{name: "another ClusterIssuer", d: d, ingress: ingress("", "prod-ca", "ClusterIssuer"), want: []string{"spec.ingress.issuerRef.name"},
			wantText: `spec.ingress.issuerRef.name "prod-ca" is not an allowed ClusterIssuer: allowed are letsencrypt, staging`},
		{name: "another ClusterIssuer without a kind", d: d, ingress: ingress("", "prod-ca", ""), want: []string{"spec.ingress.issuerRef.name"}},
		{name: "an unknown kind", d: d, ingress: ingress("", "staging", "AWSPCAClusterIssuer"), want: []string{"spec.ingress.issuerRef.kind"}},
		{name: "no ClusterIssuer allowed", d: Defaults{}, ingress: ingress("", "letsencrypt", "ClusterIssuer"),
			want: []string{"spec.ingress.issuerRef.name"}, wantText: "allowed are none"},
		{name: "the default issuer is an Issuer", d: Defaults{Issuer: catalystv1.IssuerRef{Name: "letsencrypt", Kind: "Issuer"}},
			ingress: ingress("", "letsencrypt", "ClusterIssuer"), want: []string{"spec.ingress.issuerRef.name"}},

		{name: "everything at once", d: d, quota: catalystv1.Quota{CPU: q("9"), Memory: q("32Gi")}, ingress: ingress("evil.net", "prod-ca", ""),
			want: []string{"spec.resources.defaultQuota.cpu", "spec.resources.defaultQuota.memory", "spec.ingress.domain", "spec.ingress.issuerRef.name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, p := fixture()
			p.Spec.Resources.DefaultQuota = tt.quota
			p.Spec.Ingress = tt.ingress
			err := CheckProject(p, tt.d)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var vs Violations
			if !errors.As(err, &vs) {
				t.Fatalf("error %v (%T), want Violations of %q", err, err, tt.want)
			}
			var fields []string
			for _, v := range vs {
				fields = append(fields, v.Field)
			}
			if strings.Join(fields, " ") != strings.Join(tt.want, " ") {
				t.Errorf("fields %q, want %q (%v)", fields, tt.want, err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("message %q lacks %q", err.Error(), tt.wantText)
			}
		})
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("TMPDIR", "/var/cache/platform-operator")
	if got := DefaultCacheDir(); got != "/var/cache/platform-operator/catalyst-source" {
		t.Errorf("DefaultCacheDir() = %q under TMPDIR /var/cache/platform-operator", got)
	}
}
