package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// c talks to a real kube-apiserver serving the generated CRDs, so the OpenAPI and CEL rules in the type
// markers are checked the way users meet them: at admission (dry-run creates).
var c client.Client

func TestMain(m *testing.M) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		panic(err)
	}
	c = env.Client
	code := m.Run()
	if err := env.Stop(); err != nil {
		panic(err)
	}
	os.Exit(code)
}

// check creates obj as a dry run and expects want ("" accepts, else a piece of the refusal).
func check(t *testing.T, obj client.Object, want string) {
	t.Helper()
	err := c.Create(context.Background(), obj, client.DryRunAll)
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && err == nil:
		t.Fatalf("accepted, want a refusal mentioning %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("refused with %v, want a refusal mentioning %q", err, want)
	}
}

func TestProjectAdmission(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*catalystv1.Project)
		want   string
	}{
		{"the reference's sample", func(*catalystv1.Project) {}, ""},
		{"values of any shape are kept", func(p *catalystv1.Project) {
			p.Spec.Deployment.Values = &apiextensionsv1.JSON{Raw: []byte(`{"image":{"repository":"r","tag":"t"},"replicas":2,"list":[1,"a"]}`)}
		}, ""},
		{"helm, manifest or kustomize", func(p *catalystv1.Project) { p.Spec.Deployment.Type = "terraform" }, "spec.deployment.type"},
		{"https repositories only", func(p *catalystv1.Project) { p.Spec.Source.RepositoryURL = "git@github.com:org/repo" }, "repositoryUrl must be an https URL"},
		{"a branch git refuses", func(p *catalystv1.Project) { p.Spec.Source.Branch = "feature..x" }, "branch must be a valid Git branch name"},
		{"a path out of the repository", func(p *catalystv1.Project) { p.Spec.Deployment.Path = "../other" }, "path must be relative"},
		{"a zero quota", func(p *catalystv1.Project) { p.Spec.Resources.DefaultQuota.CPU = ptr.To(resource.MustParse("0")) }, "cpu quota must be positive"},
		{"a domain without a dot", func(p *catalystv1.Project) { p.Spec.Ingress.Domain = "localhost" }, "domain must be a lowercase DNS name"},
		{"an issuer kind cert-manager does not know", func(p *catalystv1.Project) { p.Spec.Ingress.IssuerRef.Kind = "Vault" }, "spec.ingress.issuerRef.kind"},
		{"egress to a CIDR", func(p *catalystv1.Project) {
			p.Spec.NetworkPolicy = &catalystv1.ProjectNetworkPolicy{Egress: []catalystv1.EgressRule{{CIDRs: []string{"10.0.0.0/8"}, Ports: []catalystv1.EgressPort{{Port: 5432}}}}}
		}, ""},
		{"egress to a bad CIDR", func(p *catalystv1.Project) {
			p.Spec.NetworkPolicy = &catalystv1.ProjectNetworkPolicy{Egress: []catalystv1.EgressRule{{CIDRs: []string{"10.0.0.0"}, Ports: []catalystv1.EgressPort{{Port: 5432}}}}}
		}, "each cidr must be an IPv4 or IPv6 CIDR"},
		{"egress without ports", func(p *catalystv1.Project) {
			p.Spec.NetworkPolicy = &catalystv1.ProjectNetworkPolicy{Egress: []catalystv1.EgressRule{{}}}
		}, "spec.networkPolicy.egress[0].ports"},
		{"a name too long for a namespace part", func(p *catalystv1.Project) { p.Name = strings.Repeat("p", 64) }, "metadata.name"},
		{"Environment namespaces it allows", func(p *catalystv1.Project) {
			p.Spec.AllowedEnvironmentNamespaces = []string{"team-a", "team-b-previews"}
		}, ""},
		{"an allowed namespace that is not a DNS label", func(p *catalystv1.Project) {
			p.Spec.AllowedEnvironmentNamespaces = []string{"Team A"}
		}, "spec.allowedEnvironmentNamespaces[0]"},
		{"an allowed namespace twice", func(p *catalystv1.Project) {
			p.Spec.AllowedEnvironmentNamespaces = []string{"team-a", "team-a"}
		}, "Duplicate value"},
		{"at most 64 allowed namespaces", func(p *catalystv1.Project) {
			for i := range 65 {
				p.Spec.AllowedEnvironmentNamespaces = append(p.Spec.AllowedEnvironmentNamespaces, fmt.Sprintf("team-%d", i))
			}
		}, "spec.allowedEnvironmentNamespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := catalysttest.Project("default", "my-project")
			tt.mutate(p)
			check(t, p, tt.want)
		})
	}
}

func TestProjectDefaults(t *testing.T) {
	p := &catalystv1.Project{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}, Spec: catalystv1.ProjectSpec{
		Source:     catalystv1.ProjectSource{RepositoryURL: "https://github.com/org/repo"},
		Deployment: catalystv1.ProjectDeployment{Type: catalystv1.DeploymentManifest},
	}}
	if err := c.Create(context.Background(), p, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	q := p.Spec.Resources.DefaultQuota
	if p.Spec.Source.Branch != "main" || p.Spec.Deployment.Path != "." || q.CPU == nil || q.CPU.String() != "1" || q.Memory == nil || q.Memory.String() != "2Gi" {
		t.Fatalf("defaults: %+v", p.Spec)
	}
}

func TestEnvironmentAdmission(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*catalystv1.Environment)
		want   string
	}{
		{"the reference's sample", func(*catalystv1.Environment) {}, ""},
		{"development or deployment", func(e *catalystv1.Environment) { e.Spec.Type = "production" }, "spec.type"},
		{"the reference's branch label is not a label value", func(e *catalystv1.Environment) {
			e.Labels[catalystv1.LabelBranch] = "feature/login"
		}, "metadata.labels"},
		{"a commit sha that is not hex", func(e *catalystv1.Environment) { e.Spec.Source.CommitSHA = "main-branch" }, "spec.source.commitSha"},
		{"a short commit sha", func(e *catalystv1.Environment) { e.Spec.Source.CommitSHA = "a1b2c3" }, "spec.source.commitSha"},
		{"pull request numbers start at 1", func(e *catalystv1.Environment) { e.Spec.Source.PRNumber = -1 }, "spec.source.prNumber"},
		{"env var names are unique", func(e *catalystv1.Environment) {
			e.Spec.Config.EnvVars = []catalystv1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}
		}, "Duplicate value"},
		{"env var names are names", func(e *catalystv1.Environment) {
			e.Spec.Config.EnvVars = []catalystv1.EnvVar{{Name: "1BAD-NAME"}}
		}, "envVars name must start with a letter"},
		{"a projectRef that is not a name", func(e *catalystv1.Environment) { e.Spec.ProjectRef.Name = "My Project" }, "spec.projectRef.name"},
		{"no projectRef", func(e *catalystv1.Environment) { e.Spec.ProjectRef.Name = "" }, "spec.projectRef.name"},
		{"a preview that expires", func(e *catalystv1.Environment) {
			e.Spec.ExpireAfter = &metav1.Duration{Duration: 72 * time.Hour}
		}, ""},
		{"a preview that expires after exactly a minute", func(e *catalystv1.Environment) {
			e.Spec.ExpireAfter = &metav1.Duration{Duration: time.Minute}
		}, ""},
		{"a preview that expires too soon", func(e *catalystv1.Environment) {
			e.Spec.ExpireAfter = &metav1.Duration{Duration: 30 * time.Second}
		}, "spec.expireAfter must be a duration of at least 1m"},
		{"a deployment never expires", func(e *catalystv1.Environment) {
			e.Spec.Type = catalystv1.EnvironmentDeployment
			e.Spec.ExpireAfter = &metav1.Duration{Duration: 72 * time.Hour}
		}, "spec.expireAfter is allowed only for type development"},
		{"a deployment without expiry", func(e *catalystv1.Environment) { e.Spec.Type = catalystv1.EnvironmentDeployment }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := catalysttest.Environment("default", "pr-123", "my-team", "my-project")
			tt.mutate(e)
			check(t, e, tt.want)
		})
	}
}

// An expireAfter that is not a duration at all, which a typed client cannot send.
func TestEnvironmentExpireAfterNotADuration(t *testing.T) {
	e := catalysttest.Environment("default", "pr-124", "my-team", "my-project")
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(catalystv1.GroupVersion.WithKind("Environment"))
	if err := unstructured.SetNestedField(u.Object, "soon", "spec", "expireAfter"); err != nil {
		t.Fatal(err)
	}
	check(t, u, "spec.expireAfter")
}

func TestEnvironmentDefaults(t *testing.T) {
	e := &catalystv1.Environment{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"},
		Spec: catalystv1.EnvironmentSpec{ProjectRef: catalystv1.ProjectReference{Name: "p"}}}
	if err := c.Create(context.Background(), e, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if e.Spec.Type != catalystv1.EnvironmentDevelopment {
		t.Fatalf("type defaults to development, got %q", e.Spec.Type)
	}
	// The type defaults before the expiry rule is checked: an expiring Environment of no type is a preview.
	e = &catalystv1.Environment{ObjectMeta: metav1.ObjectMeta{Name: "bare-expiring", Namespace: "default"},
		Spec: catalystv1.EnvironmentSpec{ProjectRef: catalystv1.ProjectReference{Name: "p"}, ExpireAfter: &metav1.Duration{Duration: time.Hour}}}
	if err := c.Create(context.Background(), e, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
}
