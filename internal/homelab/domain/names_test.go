package domain

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

func newDomain(ns, name string) *homelabv1.Domain {
	return &homelabv1.Domain{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       homelabv1.DomainSpec{Hostname: "home.example.com", Issuer: "letsencrypt"},
	}
}

func TestChildName(t *testing.T) {
	long := strings.Repeat("n", 63)
	tests := []struct {
		name, ns, dname string
		prefix          string
	}{
		{"short names are kept whole", "homelab", "main", "homelab-main-"},
		{"a long namespace and name are cut to fit", long, long, strings.Repeat("n", 50)},
		{"a cut never ends in a dash", strings.Repeat("a", 49) + "-b", "x", strings.Repeat("a", 49) + "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChildName(newDomain(tt.ns, tt.dname))
			if !strings.HasPrefix(got, tt.prefix) {
				t.Errorf("ChildName = %q, want prefix %q", got, tt.prefix)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("ChildName %q is not a DNS label: %v", got, errs)
			}
			if errs := validation.IsDNS1123Label(TLSSecretName(newDomain(tt.ns, tt.dname))); len(errs) > 0 {
				t.Errorf("TLSSecretName is not a DNS label: %v", errs)
			}
			if strings.Contains(got, "--") {
				t.Errorf("ChildName %q has a cut ending in a dash", got)
			}
		})
	}
}

func TestChildNameKeepsLookalikesApart(t *testing.T) {
	pairs := [][2]*homelabv1.Domain{
		{newDomain("a-b", "c"), newDomain("a", "b-c")},
		{newDomain(strings.Repeat("x", 63), "one"), newDomain(strings.Repeat("x", 63), "two")},
	}
	for _, p := range pairs {
		if a, b := ChildName(p[0]), ChildName(p[1]); a == b {
			t.Errorf("%s/%s and %s/%s share the child name %q", p[0].Namespace, p[0].Name, p[1].Namespace, p[1].Name, a)
		}
	}
}

func TestBelongsTo(t *testing.T) {
	d := newDomain("homelab", "main")
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"the Domain's own labels", Labels(d), true},
		{"another Domain's labels", Labels(newDomain("homelab", "other")), false},
		{"the same name in another namespace", Labels(newDomain("other", "main")), false},
		{"no labels", nil, false},
		{"our Domain labels without managed-by", map[string]string{NamespaceLabel: "homelab", NameLabel: "main"}, false},
		{"managed-by alone", map[string]string{labels.ManagedByLabel: labels.OperatorName}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BelongsTo(tt.labels, d); got != tt.want {
				t.Errorf("BelongsTo = %v, want %v", got, tt.want)
			}
			ns, name, ok := Owner(tt.labels)
			if tt.want && (!ok || ns != "homelab" || name != "main") {
				t.Errorf("Owner = %q, %q, %v; want homelab, main, true", ns, name, ok)
			}
		})
	}
}
