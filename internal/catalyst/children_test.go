package catalyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

func fixture() (*catalystv1.Environment, *catalystv1.Project) {
	env := catalysttest.Environment("my-team-my-project", "pr-123", "my-team", "my-project")
	env.UID = types.UID("uid-1")
	return env, catalysttest.Project("my-team", "my-project")
}

func TestNamespace(t *testing.T) {
	env, _ := fixture()
	ns := Namespace(env, PartsOf(env), "my-team-my-project-pr-123")
	want := map[string]string{
		catalystv1.LabelTeam: "my-team", catalystv1.LabelProject: "my-project", catalystv1.LabelEnvironment: "pr-123",
		catalystv1.LabelBranch: "feature-login", labels.ManagedByLabel: labels.OperatorName,
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted",
		"pod-security.kubernetes.io/audit": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}
	for k, v := range want {
		if ns.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, ns.Labels[k], v)
		}
	}
	if ns.Annotations[catalystv1.AnnotationBranch] != "feature/login" {
		t.Errorf("raw branch annotation = %q", ns.Annotations[catalystv1.AnnotationBranch])
	}
	if !OwnedBy(ns, "uid-1") || OwnedBy(ns, "uid-2") || OwnedBy(ns, "") {
		t.Errorf("OwnedBy does not go by the Environment's UID: %v", ns.Annotations)
	}
	if ns.Annotations[OwnerAnnotation] != "my-team-my-project/pr-123" {
		t.Errorf("owner annotation = %q", ns.Annotations[OwnerAnnotation])
	}
	delete(ns.Labels, labels.ManagedByLabel)
	if OwnedBy(ns, "uid-1") {
		t.Error("a namespace without the managed-by label is nobody's")
	}
}

func TestQuotaAndLimits(t *testing.T) {
	env, _ := fixture()
	tests := []struct {
		name                      string
		q                         catalystv1.Quota
		cpu, mem                  string
		reqCPU, reqMem, limCPU, m string
	}{
		{"reference", catalystv1.Quota{CPU: ptr.To(resource.MustParse("1")), Memory: ptr.To(resource.MustParse("2Gi"))},
			"1", "2Gi", "100m", "204Mi", "250m", "512Mi"},
		{"defaults", catalystv1.Quota{}, "1", "2Gi", "100m", "204Mi", "250m", "512Mi"},
		{"small", catalystv1.Quota{CPU: ptr.To(resource.MustParse("5m")), Memory: ptr.To(resource.MustParse("1Mi"))},
			"5m", "1Mi", "1m", "104857", "1m", "262144"},
		{"large", catalystv1.Quota{CPU: ptr.To(resource.MustParse("8")), Memory: ptr.To(resource.MustParse("16Gi"))},
			"8", "16Gi", "800m", "1638Mi", "2", "4Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rq := ResourceQuota(env, "ns", tt.q)
			for _, k := range []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU} {
				if q := rq.Spec.Hard[k]; q.Cmp(resource.MustParse(tt.cpu)) != 0 {
					t.Errorf("quota %s = %s, want %s", k, q.String(), tt.cpu)
				}
			}
			for _, k := range []corev1.ResourceName{corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory} {
				if q := rq.Spec.Hard[k]; q.Cmp(resource.MustParse(tt.mem)) != 0 {
					t.Errorf("quota %s = %s, want %s", k, q.String(), tt.mem)
				}
			}
			checkQuotaObjects(t, rq, DefaultQuotaStorage.String())
			lr := LimitRange(env, "ns", tt.q).Spec.Limits[0]
			for _, c := range []struct {
				got  resource.Quantity
				want string
			}{
				{lr.DefaultRequest[corev1.ResourceCPU], tt.reqCPU}, {lr.DefaultRequest[corev1.ResourceMemory], tt.reqMem},
				{lr.Default[corev1.ResourceCPU], tt.limCPU}, {lr.Default[corev1.ResourceMemory], tt.m},
			} {
				if c.got.Cmp(resource.MustParse(c.want)) != 0 {
					t.Errorf("limit range value %s, want %s", c.got.String(), c.want)
				}
			}
			if lr.Type != corev1.LimitTypeContainer {
				t.Errorf("limit range type %s", lr.Type)
			}
		})
	}
}

// checkQuotaObjects checks the storage and object counts of an environment's ResourceQuota, and that it
// holds nothing else.
func checkQuotaObjects(t *testing.T, rq *corev1.ResourceQuota, storage string) {
	t.Helper()
	want := map[corev1.ResourceName]string{
		corev1.ResourceRequestsStorage:        storage,
		corev1.ResourcePersistentVolumeClaims: "10",
		corev1.ResourcePods:                   "50",
		corev1.ResourceServices:               "20",
		corev1.ResourceServicesLoadBalancers:  "0",
		corev1.ResourceServicesNodePorts:      "0",
		corev1.ResourceConfigMaps:             "100",
		corev1.ResourceSecrets:                "100",
	}
	for k, v := range want {
		got, ok := rq.Spec.Hard[k]
		if !ok || got.Cmp(resource.MustParse(v)) != 0 {
			t.Errorf("quota %s = %s (set %v), want %s", k, got.String(), ok, v)
		}
	}
	if len(rq.Spec.Hard) != len(want)+4 {
		t.Errorf("quota holds %d resources, want the 4 of cpu and memory and %d more: %v", len(rq.Spec.Hard), len(want), rq.Spec.Hard)
	}
}

func TestQuotaStorage(t *testing.T) {
	env, p := fixture()
	tests := []struct {
		name string
		d    Defaults
		want string
	}{
		{"operator default", Defaults{}, "20Gi"},
		{"flag", Defaults{QuotaStorage: ptr.To(resource.MustParse("100Gi"))}, "100Gi"},
		{"no storage at all", Defaults{QuotaStorage: ptr.To(resource.MustParse("0"))}, "0"},
		{"negative is none", Defaults{QuotaStorage: ptr.To(resource.MustParse("-1Gi"))}, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := SettingsFor(p, tt.d)
			rq := ResourceQuotaFor(env, "ns", s)
			checkQuotaObjects(t, rq, tt.want)
			if q := rq.Spec.Hard[corev1.ResourceLimitsMemory]; q.String() != "2Gi" {
				t.Errorf("limits.memory = %s, want the Project's 2Gi", q.String())
			}
		})
	}
}

func TestNetworkPolicy(t *testing.T) {
	env, _ := fixture()
	tests := []struct {
		name      string
		ingressNS string
		egress    []catalystv1.EgressRule
		from      int
		rules     int
	}{
		{"default egress", "ingress-nginx", DefaultEgress(), 2, 2},
		{"no ingress controller namespace", "", DefaultEgress(), 1, 2},
		{"project egress", "ingress-nginx", []catalystv1.EgressRule{
			{CIDRs: []string{"10.0.0.0/8"}, Ports: []catalystv1.EgressPort{{Protocol: "TCP", Port: 5432}}},
			{Ports: []catalystv1.EgressPort{{Port: 443}, {Protocol: "UDP", Port: 443}}},
		}, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := NetworkPolicy(env, "ns", tt.ingressNS, tt.egress)
			if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.PodSelector.MatchLabels) != 0 {
				t.Fatalf("the policy must select every pod for ingress and egress: %+v", np.Spec)
			}
			if got := len(np.Spec.Ingress[0].From); got != tt.from {
				t.Fatalf("ingress peers = %d, want %d", got, tt.from)
			}
			if tt.ingressNS != "" && np.Spec.Ingress[0].From[1].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != tt.ingressNS {
				t.Fatalf("ingress controller namespace peer: %+v", np.Spec.Ingress[0].From[1])
			}
			if got := len(np.Spec.Egress); got != tt.rules {
				t.Fatalf("egress rules = %d, want %d", got, tt.rules)
			}
			dns := np.Spec.Egress[0]
			if len(dns.To) != 0 || len(dns.Ports) != 2 || dns.Ports[0].Port.IntValue() != 53 {
				t.Fatalf("the first egress rule must be DNS: %+v", dns)
			}
			for i, e := range tt.egress {
				r := np.Spec.Egress[i+1]
				if len(r.Ports) != len(e.Ports) || len(r.To) != len(e.CIDRs) {
					t.Fatalf("egress rule %d = %+v from %+v", i, r, e)
				}
				for j, p := range r.Ports {
					want := corev1.Protocol(e.Ports[j].Protocol)
					if want == "" {
						want = corev1.ProtocolTCP
					}
					if *p.Protocol != want || p.Port.IntValue() != int(e.Ports[j].Port) {
						t.Fatalf("egress port %+v from %+v", p, e.Ports[j])
					}
				}
			}
		})
	}
}

func TestIngressAndCertificate(t *testing.T) {
	env, p := fixture()
	s := SettingsFor(p, Defaults{Domain: "preview.catalyst.dev", IngressClass: "nginx", IngressNamespace: "ingress-nginx",
		Issuer: catalystv1.IssuerRef{Name: "letsencrypt"}})
	if s.Domain != "preview.example.com" || s.Issuer.Name != catalysttest.Issuer || s.IngressClass != "nginx" {
		t.Fatalf("the Project's choices win over the defaults: %+v", s)
	}
	host := Host("my-team-my-project-pr-123", s.Domain)
	cert := Certificate(env, "ns", host, s)
	if cert.Spec.SecretName != TLSSecretName || cert.Spec.DNSNames[0] != host || cert.Spec.IssuerRef.Kind != "ClusterIssuer" {
		t.Fatalf("certificate %+v", cert.Spec)
	}
	ing := Ingress(env, "ns", host, s, true)
	if ing.Spec.Rules[0].Host != host || ing.Spec.TLS[0].SecretName != TLSSecretName || *ing.Spec.IngressClassName != "nginx" {
		t.Fatalf("ingress %+v", ing.Spec)
	}
	if b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service; b.Name != ServiceName || b.Port.Name != ServicePort {
		t.Fatalf("backend %+v", b)
	}
	if len(ing.Annotations) != 0 {
		t.Fatalf("no ingress-shim annotation: the operator makes the Certificate itself: %v", ing.Annotations)
	}
	if got := URL(host, true); got != "https://my-team-my-project-pr-123.preview.example.com" {
		t.Fatalf("URL = %s", got)
	}

	bare := SettingsFor(&catalystv1.Project{}, Defaults{Domain: "d.example"})
	if Certificate(env, "ns", host, bare) != nil {
		t.Fatal("no issuer, no Certificate")
	}
	plain := Ingress(env, "ns", host, bare, false)
	if plain.Spec.TLS != nil || plain.Spec.IngressClassName != nil {
		t.Fatalf("plain ingress %+v", plain.Spec)
	}
	if len(bare.Egress) != 1 || bare.Egress[0].Ports[0].Port != 443 {
		t.Fatalf("default egress %+v", bare.Egress)
	}
	if pt := ing.Spec.Rules[0].HTTP.Paths[0].PathType; *pt != networkingv1.PathTypePrefix {
		t.Fatalf("path type %s", *pt)
	}
}
