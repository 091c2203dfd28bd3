package catalyst

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// The expected names were worked out by hand from the procedure, and the hash suffixes with
// python3 -c 'import hashlib; print(hashlib.sha256(s.encode()).hexdigest()[:5])', not with this code.
func TestNamespaceName(t *testing.T) {
	a, b, c := strings.Repeat("a", 20), strings.Repeat("b", 20), strings.Repeat("c", 21)
	tests := []struct {
		name  string
		parts []string
		want  string
	}{
		{"the reference's example", []string{"my-team", "my-project", "pr-123"}, "my-team-my-project-pr-123"},
		{"upper case", []string{"My-Team", "MyProject", "PR-7"}, "my-team-myproject-pr-7"},
		{"runs of other characters become one dash", []string{"my team", "my_project", "feature/login"}, "my-team-my-project-feature-login"},
		{"unicode letters are outside [a-z0-9-]", []string{"Équipe Ünïcode", "Projet/Été", "PR #42"}, "quipe-n-code-projet-t-pr-42"},
		{"repeated and trailing dashes", []string{"team-", "--proj--", "env!!"}, "team-proj-env"},
		{"empty parts are dropped", []string{"", "proj", "!!!"}, "proj"},
		{"exactly 63 is kept", []string{a, b, c}, a + "-" + b + "-" + c},
		{"64 is shortened to 57 and a hash", []string{a, b, c + "c"}, a + "-" + b + "-" + strings.Repeat("c", 15) + "-48540"},
		{"a dash at the cut is dropped", []string{strings.Repeat("a", 56), strings.Repeat("b", 10)}, strings.Repeat("a", 56) + "-cf2ce"},
		{"a long realistic name", []string{"Platform Engineering", "customer-facing-checkout-service", "feature/login redesign"},
			"platform-engineering-customer-facing-checkout-service-fea-85855"},
		{"one long part", []string{strings.Repeat("x", 100)}, strings.Repeat("x", 57) + "-09ecb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NamespaceName(tt.parts...)
			if got != tt.want {
				t.Fatalf("NamespaceName(%q) = %q, want %q", tt.parts, got, tt.want)
			}
			if errs := validation.IsDNS1123Label(got); got != "" && len(errs) > 0 {
				t.Fatalf("%q is not a valid namespace name: %v", got, errs)
			}
		})
	}
}

func TestLabelValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"feature/login", "feature-login"},
		{"Release_1.2", "Release_1.2"},
		{"-dash-", "dash"},
		{"fix: ümlaut!", "fix-mlaut"},
		{"..a..", "a"},
		{"", ""},
		{strings.Repeat("x", 63), strings.Repeat("x", 63)},
		{strings.Repeat("x", 100), strings.Repeat("x", 57) + "-09ecb"},
	}
	for _, tt := range tests {
		got := LabelValue(tt.in)
		if got != tt.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Errorf("LabelValue(%q) = %q is not a valid label value: %v", tt.in, got, errs)
		}
	}
}

func TestReserved(t *testing.T) {
	for ns, want := range map[string]bool{
		"default": true, "kube-system": true, "kube-public": true, "openshift-ingress": true, "openshift": true,
		"my-team-my-project-pr-1": false, "kubernetes-dashboard": false, "defaults": false,
	} {
		if got := Reserved(ns); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", ns, got, want)
		}
	}
}

func TestPartsOf(t *testing.T) {
	env := func(labels map[string]string, ref catalystv1.ProjectReference) *catalystv1.Environment {
		return &catalystv1.Environment{
			ObjectMeta: metav1.ObjectMeta{Name: "pr-123", Namespace: "my-team-my-project", Labels: labels},
			Spec:       catalystv1.EnvironmentSpec{ProjectRef: ref, Source: catalystv1.EnvironmentSource{Branch: "spec/branch"}},
		}
	}
	tests := []struct {
		name   string
		env    *catalystv1.Environment
		want   Parts
		wantNS string
	}{
		{"labels", env(map[string]string{
			catalystv1.LabelTeam: "My Team", catalystv1.LabelProject: "my-project",
			catalystv1.LabelEnvironment: "pr-123", catalystv1.LabelBranch: "feature-login",
		}, catalystv1.ProjectReference{Name: "my-project"}),
			Parts{Team: "My Team", Project: "my-project", Environment: "pr-123", ProjectNamespace: "my-team-my-project", Branch: "spec/branch"},
			"my-team-my-project-pr-123"},
		// The team label names the namespace part only: a label any tenant may write must not lead the
		// Project lookup into another team's namespace.
		{"another team's label without projectRef.namespace: the own namespace holds the Project", env(map[string]string{
			catalystv1.LabelTeam: "team-b", catalystv1.LabelProject: "app", catalystv1.LabelEnvironment: "pr-123",
		}, catalystv1.ProjectReference{Name: "app"}),
			Parts{Team: "team-b", Project: "app", Environment: "pr-123", ProjectNamespace: "my-team-my-project", Branch: "spec/branch"},
			"team-b-app-pr-123"},
		{"labels and projectRef.namespace", env(map[string]string{
			catalystv1.LabelTeam: "My Team", catalystv1.LabelProject: "my-project", catalystv1.LabelEnvironment: "pr-123",
		}, catalystv1.ProjectReference{Name: "my-project", Namespace: "my-team"}),
			Parts{Team: "My Team", Project: "my-project", Environment: "pr-123", ProjectNamespace: "my-team", Branch: "spec/branch"},
			"my-team-my-project-pr-123"},
		{"no labels: the Environment's namespace holds the Project", env(nil, catalystv1.ProjectReference{Name: "web"}),
			Parts{Team: "my-team-my-project", Project: "web", Environment: "pr-123", ProjectNamespace: "my-team-my-project", Branch: "spec/branch"},
			"my-team-my-project-web-pr-123"},
		{"no labels, projectRef.namespace", env(nil, catalystv1.ProjectReference{Name: "web", Namespace: "acme"}),
			Parts{Team: "acme", Project: "web", Environment: "pr-123", ProjectNamespace: "acme", Branch: "spec/branch"},
			"acme-web-pr-123"},
		{"labels that sanitize to nothing fall back", env(map[string]string{
			catalystv1.LabelTeam: "!!", catalystv1.LabelProject: "--", catalystv1.LabelEnvironment: "__",
		}, catalystv1.ProjectReference{Name: "web", Namespace: "acme"}),
			Parts{Team: "acme", Project: "web", Environment: "pr-123", ProjectNamespace: "acme", Branch: "spec/branch"},
			"acme-web-pr-123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PartsOf(tt.env)
			if got != tt.want {
				t.Fatalf("PartsOf = %+v, want %+v", got, tt.want)
			}
			if ns := got.Namespace(); ns != tt.wantNS {
				t.Fatalf("Namespace() = %q, want %q", ns, tt.wantNS)
			}
		})
	}
}

func TestProjectAllows(t *testing.T) {
	project := func(ns string, allowed ...string) *catalystv1.Project {
		return &catalystv1.Project{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: catalystv1.ProjectSpec{AllowedEnvironmentNamespaces: allowed}}
	}
	tests := []struct {
		name    string
		project *catalystv1.Project
		envNS   string
		want    bool
	}{
		{"the Project's own namespace", project("team-b"), "team-b", true},
		{"another namespace, no list", project("team-b"), "team-a", false},
		{"another namespace, listed", project("team-b", "team-x", "team-a"), "team-a", true},
		{"another namespace, not listed", project("team-b", "team-x"), "team-a", false},
		{"a prefix is not the namespace", project("team-b", "team"), "team-a", false},
		{"the empty namespace is never listed", project("team-b", "team-a"), "", false},
		{"no Project", nil, "team-a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ProjectAllows(tt.project, tt.envNS); got != tt.want {
				t.Fatalf("ProjectAllows = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHostsOfDistinctNamespacesDiffer(t *testing.T) {
	// The host's first label is the namespace, which holds no dot: (namespace, domain) is recovered from
	// the host, so different namespaces never share a host, even across domains.
	pairs := [][2]string{{"a-b", "c.example.com"}, {"a", "b.c.example.com"}, {"a-b-c", "example.com"}, {"a", "b-c.example.com"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		h := Host(p[0], p[1])
		if other, ok := seen[h]; ok {
			t.Fatalf("%v and %v share host %s", p, other, h)
		}
		seen[h] = p
	}
}
