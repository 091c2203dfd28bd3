package homelab

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

func TestParseDomainPolicyRefusesMalformedEntries(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty allows nothing", "", ""},
		{"blanks", " ; ", ""},
		{"one entry", "team-a=a.example.com", ""},
		{"entries with issuers", "team-a=a.example.com|b.example.com:letsencrypt|internal; *=shared.example.com", ""},
		{"any hostname for any namespace", "*=*", ""},
		{"no equals sign", "team-a", "want NAMESPACE=SUFFIX"},
		{"invalid namespace", "Team_A=a.example.com", "neither a namespace name"},
		{"empty suffix", "team-a=", "suffix"},
		{"uppercase suffix", "team-a=A.example.com", "suffix"},
		{"wildcard suffix", "team-a=*.example.com", "suffix"},
		{"empty issuer", "team-a=a.example.com:", "ClusterIssuer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDomainPolicy(tt.in)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("ParseDomainPolicy(%q): %v", tt.in, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("ParseDomainPolicy(%q) = %v, want an error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestDomainPolicyAllows(t *testing.T) {
	policy, err := ParseDomainPolicy("team-a=a.example.com:letsencrypt; team-a=lab.test; *=shared.example.com:letsencrypt|staging; admin=*")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ns, hostname, issuer string
		want                       bool
		wantMsg                    string
	}{
		{"the suffix itself", "team-a", "a.example.com", "letsencrypt", true, ""},
		{"a name below the suffix", "team-a", "www.a.example.com", "letsencrypt", true, ""},
		{"a name that only ends like the suffix", "team-a", "evila.example.com", "letsencrypt", false, "only hostnames under"},
		{"the parent of the suffix", "team-a", "example.com", "letsencrypt", false, "only hostnames under"},
		{"another namespace's suffix", "team-b", "www.a.example.com", "letsencrypt", false, "only hostnames under shared.example.com"},
		{"an issuer the entry does not list", "team-a", "www.a.example.com", "internal-ca", false, "ClusterIssuer internal-ca"},
		{"an entry without issuers allows any", "team-a", "x.lab.test", "internal-ca", true, ""},
		{"the * entry applies to every namespace", "team-b", "x.shared.example.com", "staging", true, ""},
		{"the * entry's issuers still bind", "team-b", "x.shared.example.com", "internal-ca", false, "ClusterIssuer internal-ca"},
		{"a namespace allowed any hostname", "admin", "corp.example.org", "anything", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := policy.Allows(tt.ns, tt.hostname, tt.issuer)
			if got != tt.want || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("Allows(%s, %s, %s) = %t, %q; want %t with %q", tt.ns, tt.hostname, tt.issuer, got, msg, tt.want, tt.wantMsg)
			}
		})
	}
	if ok, msg := (DomainPolicy{}).Allows("team-a", "a.example.com", "letsencrypt"); ok || !strings.Contains(msg, "no hostname") {
		t.Fatalf("the empty policy: Allows = %t, %q; want a refusal saying the namespace may claim no hostname", ok, msg)
	}
}

func TestHostnamesOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"example.com", "example.com", true},
		{"a.example.com", "example.com", true}, // *.example.com covers a.example.com
		{"example.com", "a.example.com", true},
		{"a.example.com", "b.example.com", false},    // siblings: *.example.com is neither's
		{"b.a.example.com", "example.com", false},    // two labels below: the wildcard covers one label
		{"a.example.com", "a.example.org", false},    // different parents
		{"xa.example.com", "a.example.com", false},   // a suffix that is not a label boundary
		{"example.com.evil", "example.com", false},   // a prefix is not a parent
		{"www.example.com", "www.example.com", true}, // the same name
	}
	for _, tt := range tests {
		if got := hostnamesOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("hostnamesOverlap(%s, %s) = %t, want %t", tt.a, tt.b, got, tt.want)
		}
		// Whatever overlaps is found through the index: one Domain's index values hold the other's
		// hostname or the other's parent.
		if tt.want && !indexFinds(tt.a, tt.b) {
			t.Errorf("listing by %s and its parent does not find a Domain for %s", tt.a, tt.b)
		}
	}
}

// indexFinds says whether listing the hostname index by query and by query's parent finds a Domain for
// hostname.
func indexFinds(query, hostname string) bool {
	d := &homelabv1.Domain{Spec: homelabv1.DomainSpec{Hostname: hostname}}
	q := &homelabv1.Domain{Spec: homelabv1.DomainSpec{Hostname: query}}
	for _, key := range claimIndexValues(q) {
		for _, v := range claimIndexValues(d) {
			if key == v {
				return true
			}
		}
	}
	return false
}

func TestClaimsBefore(t *testing.T) {
	early, late := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	domain := func(ns, name string, at metav1.Time) *homelabv1.Domain {
		return &homelabv1.Domain{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: at}}
	}
	tests := []struct {
		name string
		a, b *homelabv1.Domain
		want bool
	}{
		{"older first", domain("z", "z", early), domain("a", "a", late), true},
		{"younger second", domain("a", "a", late), domain("z", "z", early), false},
		{"same second: namespace", domain("a", "z", early), domain("b", "a", early), true},
		{"same second and namespace: name", domain("a", "b", early), domain("a", "a", early), false},
	}
	for _, tt := range tests {
		if got := claimsBefore(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: claimsBefore = %t, want %t", tt.name, got, tt.want)
		}
	}
}

func TestDomainAllowsNamespace(t *testing.T) {
	d := func(allowed ...string) *homelabv1.Domain {
		return &homelabv1.Domain{ObjectMeta: metav1.ObjectMeta{Namespace: "infra"}, Spec: homelabv1.DomainSpec{AllowedNamespaces: allowed}}
	}
	tests := []struct {
		name string
		d    *homelabv1.Domain
		ns   string
		want bool
	}{
		{"its own namespace", d(), "infra", true},
		{"another namespace, not listed", d(), "team-a", false},
		{"another namespace, listed", d("team-a"), "team-a", true},
		{"another namespace, others listed", d("team-b"), "team-a", false},
		{"every namespace", d("*"), "team-a", true},
	}
	for _, tt := range tests {
		if got := domainAllowsNamespace(tt.d, tt.ns); got != tt.want {
			t.Errorf("%s: domainAllowsNamespace = %t, want %t", tt.name, got, tt.want)
		}
	}
}
