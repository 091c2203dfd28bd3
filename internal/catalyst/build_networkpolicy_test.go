package catalyst

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// reaches says whether an egress rule of np lets a build pod connect to ip on TCP port: the rule's
// ports include it and one of its peers' ipBlocks holds ip outside its excepts (a rule without peers
// reaches every address). Namespace selectors reach pods, which ip is not taken to be.
func reaches(t *testing.T, np *networkingv1.NetworkPolicy, ip string, port int32) bool {
	t.Helper()
	addr := netip.MustParseAddr(ip)
	in := func(cidr string) bool { return netip.MustParsePrefix(cidr).Contains(addr) }
	for _, e := range np.Spec.Egress {
		portOK := len(e.Ports) == 0
		for _, p := range e.Ports {
			portOK = portOK || (*p.Protocol == corev1.ProtocolTCP && p.Port.IntVal == port)
		}
		if !portOK {
			continue
		}
		if len(e.To) == 0 {
			return true
		}
		for _, peer := range e.To {
			if peer.IPBlock == nil || !in(peer.IPBlock.CIDR) {
				continue
			}
			if !slices.ContainsFunc(peer.IPBlock.Except, in) {
				return true
			}
		}
	}
	return false
}

func TestBuildNetworkPolicy(t *testing.T) {
	np := BuildNetworkPolicy("team", BuildEgress{PublicPorts: []int32{443, 5000, 8443},
		Private: []BuildDestination{{Port: 5001, CIDR: "10.1.2.3/32"}, {Port: 5000, Namespace: "openshift-image-registry"}}})
	if np.Namespace != "team" || np.Name != BuildNetworkPolicyName || np.Kind != "NetworkPolicy" {
		t.Fatalf("policy %s/%s kind %q", np.Namespace, np.Name, np.Kind)
	}
	if !oplabels.IsManaged(np.Labels) || len(np.OwnerReferences) != 0 {
		t.Fatalf("labels %v owners %v", np.Labels, np.OwnerReferences)
	}

	// It selects the build pods, and only them: a pod of the namespace without both labels is not fenced.
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	env, p := buildFixture()
	job := BuildJob(BuildInput{Env: env, Project: p, Name: "n", Commit: fullSHA, Config: BuildConfig{}})
	pods := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"a build pod", job.Spec.Template.Labels, true},
		{"the team's own pod", map[string]string{"app": "web"}, false},
		{"a pod calling itself catalyst-build, not the operator's", map[string]string{oplabels.NameLabel: BuildApp}, false},
		{"another child of the operator", oplabels.Labels(AppName, "x"), false},
	}
	for _, pod := range pods {
		if got := sel.Matches(labels.Set(pod.labels)); got != pod.want {
			t.Errorf("%s (%v): selected %v, want %v", pod.name, pod.labels, got, pod.want)
		}
	}

	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) || len(np.Spec.Ingress) != 0 {
		t.Fatalf("policy types %v, ingress %+v: want ingress denied whole", np.Spec.PolicyTypes, np.Spec.Ingress)
	}

	// Where a build pod's connection may go: the public ports to public addresses; a listed private
	// registry on its port alone; never a metadata service, the cluster's network or loopback.
	tests := []struct {
		ip   string
		port int32
		want bool
	}{
		{"140.82.112.3", 443, true},
		{"140.82.112.3", 8443, true},
		{"2606:4700::1111", 443, true},
		{"140.82.112.3", 22, false},
		{"169.254.169.254", 80, false},
		{"169.254.169.254", 443, false},
		{"169.254.169.254", 5000, false},
		{"fe80::1", 443, false},
		{"10.96.0.1", 443, false},     // A Service network's API server.
		{"172.30.0.1", 443, false},    // OpenShift's.
		{"192.168.1.10", 6443, false}, // A node's API server.
		{"127.0.0.1", 443, false},
		{"100.64.0.1", 443, false},
		{"fd00::1", 443, false},
		{"10.1.2.3", 5001, true}, // Listed, on its port.
		{"10.1.2.3", 443, false},
		{"10.1.2.4", 5001, false},
	}
	for _, tt := range tests {
		if got := reaches(t, np, tt.ip, tt.port); got != tt.want {
			t.Errorf("reaches %s:%d = %v, want %v", tt.ip, tt.port, got, tt.want)
		}
	}
	// DNS goes anywhere (a node-local cache listens on a link-local address); nothing else does.
	if e := np.Spec.Egress[0]; len(e.To) != 0 || len(e.Ports) != 2 || e.Ports[0].Port.IntVal != 53 || e.Ports[1].Port.IntVal != 53 {
		t.Errorf("first rule %+v: want DNS, UDP and TCP 53, to any address", e)
	}
	for _, e := range np.Spec.Egress[1:] {
		if len(e.To) == 0 {
			t.Errorf("rule %+v reaches every address", e)
		}
	}
	last := np.Spec.Egress[len(np.Spec.Egress)-1]
	if ns := last.To[0].NamespaceSelector; ns == nil || ns.MatchLabels[corev1.LabelMetadataName] != "openshift-image-registry" || last.Ports[0].Port.IntVal != 5000 {
		t.Errorf("in-cluster registry rule %+v: want the pods of namespace openshift-image-registry on 5000", last)
	}
}

func TestBuildEgressOf(t *testing.T) {
	project := func(name, repo string, build *catalystv1.ProjectBuild) catalystv1.Project {
		p := catalysttest.Project("team", name)
		p.Spec.Source.RepositoryURL = repo
		p.Spec.Build = build
		return *p
	}
	gitAllowed := func(raw string) error {
		if strings.Contains(raw, "forbidden.test") {
			return errors.New("not allowed")
		}
		return nil
	}
	tests := []struct {
		name     string
		projects []catalystv1.Project
		cfg      BuildConfig
		want     BuildEgress
	}{
		{"no Project", nil, BuildConfig{}, BuildEgress{}},
		{"https everywhere", []catalystv1.Project{project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "ghcr.io"})},
			BuildConfig{}, BuildEgress{PublicPorts: []int32{443}}},
		{"a registry and a Git host with ports, not listed: public addresses only", []catalystv1.Project{
			project("a", "https://git.example:8443/org/a", &catalystv1.ProjectBuild{Registry: "registry.example:5000"})},
			BuildConfig{}, BuildEgress{PublicPorts: []int32{5000, 8443}}},
		{"a private registry address not listed (--catalyst-registries empty): public only, as the check", []catalystv1.Project{
			project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "10.1.2.3:5000"})},
			BuildConfig{}, BuildEgress{PublicPorts: []int32{443, 5000}}},
		{"a listed private registry address: that address on its port", []catalystv1.Project{
			project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "10.1.2.3:5000"})},
			BuildConfig{Registries: []string{"10.1.2.3"}}, BuildEgress{PublicPorts: []int32{443}, Private: []BuildDestination{{Port: 5000, CIDR: "10.1.2.3/32"}}}},
		{"a registry that is not allowed opens nothing", []catalystv1.Project{
			project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "169.254.169.254:80"}),
			project("b", "https://github.com/org/b", &catalystv1.ProjectBuild{Registry: "evil.example:2222"})},
			BuildConfig{Registries: []string{"ghcr.io"}}, BuildEgress{PublicPorts: []int32{443}}},
		{"a Git URL that is not allowed opens nothing", []catalystv1.Project{
			project("a", "https://forbidden.test:2222/org/a", &catalystv1.ProjectBuild{Registry: "ghcr.io"})},
			BuildConfig{GitAllowed: gitAllowed}, BuildEgress{PublicPorts: []int32{443}}},
		{"a listed private Git host", []catalystv1.Project{
			project("a", "https://192.168.5.5:3000/org/a", &catalystv1.ProjectBuild{Registry: "ghcr.io"})},
			BuildConfig{GitHosts: []string{"192.168.5.5"}}, BuildEgress{PublicPorts: []int32{443}, Private: []BuildDestination{{Port: 3000, CIDR: "192.168.5.5/32"}}}},
		{"a plain-http registry without a port: https, then http", []catalystv1.Project{
			project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "registry.lan"})},
			BuildConfig{InsecureRegistries: []string{"registry.lan"}}, BuildEgress{PublicPorts: []int32{80, 443}}},
		{"the namespace's Projects together, sorted, once each", []catalystv1.Project{
			project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "registry.example:5001"}),
			project("b", "https://git.example:8443/org/b", &catalystv1.ProjectBuild{Registry: "registry.example:5000"}),
			project("c", "https://git.example:8443/org/c", &catalystv1.ProjectBuild{Registry: "registry.example:5000"})},
			BuildConfig{}, BuildEgress{PublicPorts: []int32{443, 5000, 5001, 8443}}},
		{"the default registry, an in-cluster Service, listed: its namespace's pods", []catalystv1.Project{
			project("a", "https://github.com/org/a", nil)},
			BuildConfig{DefaultRegistry: "image-registry.openshift-image-registry.svc:5000", Registries: []string{"image-registry.openshift-image-registry.svc"}},
			BuildEgress{PublicPorts: []int32{443}, Private: []BuildDestination{{Port: 5000, Namespace: "openshift-image-registry"}}}},
		{"a Project without spec.build and no default: its Git host only", []catalystv1.Project{
			project("a", "https://github.com/org/a", nil)}, BuildConfig{}, BuildEgress{PublicPorts: []int32{443}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildEgressOf(tt.projects, tt.cfg)
			if !slices.Equal(got.PublicPorts, tt.want.PublicPorts) || !slices.Equal(got.Private, tt.want.Private) {
				t.Fatalf("BuildEgressOf = %+v, want %+v", got, tt.want)
			}
			np := BuildNetworkPolicy("team", got)
			for _, port := range []int32{80, 443, 5000, 5001, 2222, 3000, 8443} {
				if reaches(t, np, "169.254.169.254", port) {
					t.Errorf("the policy reaches 169.254.169.254:%d", port)
				}
			}
		})
	}
}
