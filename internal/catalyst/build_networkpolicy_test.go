package catalyst

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

func TestBuildNetworkPolicy(t *testing.T) {
	np := BuildNetworkPolicy("team", []int32{443, 5000, 8443})
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
	type rule struct {
		proto corev1.Protocol
		port  int32
	}
	var got []rule
	for _, e := range np.Spec.Egress {
		if len(e.To) != 0 {
			t.Errorf("egress to %+v: hosts are names, the rules must not pin addresses", e.To)
		}
		for _, p := range e.Ports {
			got = append(got, rule{*p.Protocol, p.Port.IntVal})
		}
	}
	want := []rule{{corev1.ProtocolUDP, 53}, {corev1.ProtocolTCP, 53}, {corev1.ProtocolTCP, 443}, {corev1.ProtocolTCP, 5000}, {corev1.ProtocolTCP, 8443}}
	if !slices.Equal(got, want) {
		t.Fatalf("egress %v, want %v", got, want)
	}
}

func TestBuildPorts(t *testing.T) {
	project := func(name, repo string, build *catalystv1.ProjectBuild) catalystv1.Project {
		p := catalysttest.Project("team", name)
		p.Spec.Source.RepositoryURL = repo
		p.Spec.Build = build
		return *p
	}
	tests := []struct {
		name     string
		projects []catalystv1.Project
		cfg      BuildConfig
		want     []int32
	}{
		{"no Project", nil, BuildConfig{}, nil},
		{"https everywhere", []catalystv1.Project{project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "ghcr.io"})},
			BuildConfig{}, []int32{443}},
		{"a registry and a Git host with ports", []catalystv1.Project{
			project("a", "https://git.internal:8443/org/a", &catalystv1.ProjectBuild{Registry: "registry:5000"})},
			BuildConfig{}, []int32{5000, 8443}},
		{"a plain-http registry without a port: https, then http", []catalystv1.Project{
			project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "registry.lan"})},
			BuildConfig{InsecureRegistries: []string{"registry.lan"}}, []int32{80, 443}},
		{"the namespace's Projects together, sorted, once each", []catalystv1.Project{
			project("a", "https://github.com/org/a", &catalystv1.ProjectBuild{Registry: "registry:5001"}),
			project("b", "https://git.internal:8443/org/b", &catalystv1.ProjectBuild{Registry: "registry:5000"}),
			project("c", "https://git.internal:8443/org/c", &catalystv1.ProjectBuild{Registry: "registry:5000"})},
			BuildConfig{}, []int32{443, 5000, 5001, 8443}},
		{"a Project without spec.build pushes to the default registry", []catalystv1.Project{
			project("a", "https://github.com/org/a", nil)},
			BuildConfig{DefaultRegistry: "image-registry.openshift-image-registry.svc:5000"}, []int32{443, 5000}},
		{"a Project without spec.build and no default: its Git host only", []catalystv1.Project{
			project("a", "https://github.com/org/a", nil)}, BuildConfig{}, []int32{443}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BuildPorts(tt.projects, tt.cfg); !slices.Equal(got, tt.want) {
				t.Fatalf("BuildPorts = %v, want %v", got, tt.want)
			}
		})
	}
}
