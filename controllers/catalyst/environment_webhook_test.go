package catalyst

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// The validator's decisions on their own, against a cache stand-in with the same index; the envtest suite
// and e2e prove the API server calls it.
func TestEnvironmentValidator(t *testing.T) {
	existing := catalysttest.Environment("team-web", "pr-1", "team", "web")
	existing.UID = "uid-existing"
	existing.Status.Namespace = "team-web-pr-1"
	// team-b's Projects: app allows team-a, closed allows nobody else.
	app := catalysttest.Project("team-b", "app")
	app.Spec.AllowedEnvironmentNamespaces = []string{"team-x", "team-a"}
	closed := catalysttest.Project("team-b", "closed")
	reader := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(existing, app, closed).
		WithIndex(&catalystv1.Environment{}, namespaceIndex, func(o client.Object) []string {
			return namespacesOf(o.(*catalystv1.Environment))
		}).Build()
	v := &EnvironmentValidator{Reader: reader}
	ctx := context.Background()

	twin := catalysttest.Environment("elsewhere", "copy", "Team", "web")
	twin.Labels[catalystv1.LabelEnvironment] = "PR_1"
	fresh := catalysttest.Environment("team-web", "pr-2", "team", "web")
	reserved := catalysttest.Environment("x", "system", "kube", "system")
	reserved.Labels[catalystv1.LabelEnvironment] = ""
	deleting := twin.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	assigned := twin.DeepCopy()
	assigned.Status.Namespace = "elsewhere-ns"
	self := existing.DeepCopy()
	ref := func(ns, name, projectNS, project string) *catalystv1.Environment {
		e := catalysttest.Environment(ns, name, "team-a", project)
		e.Spec.ProjectRef.Namespace = projectNS
		return e
	}
	allowed := ref("team-a", "pr-1", "team-b", "app")
	notAllowed := ref("team-a", "pr-2", "team-b", "closed")
	missing := ref("team-a", "pr-3", "team-b", "nothing")
	ownNamespace := ref("team-b", "pr-4", "team-b", "closed")
	// The team label naming team-b without spec.projectRef.namespace reads no Project of team-b.
	otherTeamLabel := catalysttest.Environment("team-a", "pr-5", "team-b", "closed")
	placed := notAllowed.DeepCopy()
	placed.Status.Namespace = "team-a-closed-pr-2"
	production := catalysttest.Environment("team-a", "prod", "team-a", "app")
	production.Spec.Type = catalystv1.EnvironmentDeployment
	released := production.DeepCopy()
	released.Annotations[catalystv1.AnnotationAllowDeletion] = "true"
	notQuite := production.DeepCopy()
	notQuite.Annotations[catalystv1.AnnotationAllowDeletion] = "yes"
	const refused = "spec.projectRef.namespace: Forbidden: Project team-b/closed does not allow Environments of namespace team-a (spec.allowedEnvironmentNamespaces)"

	tests := []struct {
		name     string
		validate func() error
		want     string
	}{
		{"create: a free namespace", func() error { _, err := v.ValidateCreate(ctx, fresh); return err }, ""},
		{"create: a taken namespace", func() error { _, err := v.ValidateCreate(ctx, twin); return err }, "already belongs to Environment team-web/pr-1"},
		{"create: a reserved namespace", func() error { _, err := v.ValidateCreate(ctx, reserved); return err }, "reserved"},
		{"update of the owner itself", func() error { _, err := v.ValidateUpdate(ctx, self, self); return err }, ""},
		{"update before a namespace is assigned, now colliding", func() error { _, err := v.ValidateUpdate(ctx, fresh, twin); return err }, "already belongs"},
		{"update of an Environment that has its namespace", func() error { _, err := v.ValidateUpdate(ctx, assigned, twin); return err }, ""},
		{"update of a deleted Environment", func() error { _, err := v.ValidateUpdate(ctx, twin, deleting); return err }, ""},
		{"create: a Project of another namespace that allows it", func() error { _, err := v.ValidateCreate(ctx, allowed); return err }, ""},
		{"create: a Project of another namespace that does not allow it", func() error { _, err := v.ValidateCreate(ctx, notAllowed); return err }, refused},
		{"create: no such Project in another namespace, not told apart from one that does not allow it", func() error { _, err := v.ValidateCreate(ctx, missing); return err },
			"spec.projectRef.namespace: Forbidden: Project team-b/nothing does not allow Environments of namespace team-a"},
		{"create: a Project of its own namespace, whatever its list", func() error { _, err := v.ValidateCreate(ctx, ownNamespace); return err }, ""},
		{"create: another team's label without projectRef.namespace", func() error { _, err := v.ValidateCreate(ctx, otherTeamLabel); return err }, ""},
		{"update before a namespace is assigned, to a Project that does not allow it", func() error { _, err := v.ValidateUpdate(ctx, allowed, notAllowed); return err }, refused},
		{"update of an Environment that has its namespace: the controller checks", func() error { _, err := v.ValidateUpdate(ctx, placed, placed); return err }, ""},
		{"delete a preview", func() error { _, err := v.ValidateDelete(ctx, twin); return err }, ""},
		{"delete a deployment", func() error { _, err := v.ValidateDelete(ctx, production); return err },
			`set the annotation catalyst.dev/allow-deletion: "true" on it`},
		{"delete a deployment allowed to go", func() error { _, err := v.ValidateDelete(ctx, released); return err }, ""},
		{"delete a deployment whose annotation is not \"true\"", func() error { _, err := v.ValidateDelete(ctx, notQuite); return err }, "protected from deletion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want a refusal mentioning %q", err, tt.want)
			}
		})
	}
}

// TestEnvironmentValidatorCacheLag: a Project created a moment before its Environment may not be in the
// cache yet; the validator reads it from the API server before refusing, and still refuses when the API
// server has no Project that allows the namespace.
func TestEnvironmentValidatorCacheLag(t *testing.T) {
	app := catalysttest.Project("team-b", "app")
	app.Spec.AllowedEnvironmentNamespaces = []string{"team-a"}
	closed := catalysttest.Project("team-b", "closed")
	index := func(o client.Object) []string { return namespacesOf(o.(*catalystv1.Environment)) }
	cache := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithIndex(&catalystv1.Environment{}, namespaceIndex, index).Build()
	live := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(app, closed).Build()
	v := &EnvironmentValidator{Reader: cache, APIReader: live}
	ref := func(name, project string) *catalystv1.Environment {
		e := catalysttest.Environment("team-a", name, "team-a", project)
		e.Spec.ProjectRef.Namespace = "team-b"
		return e
	}
	ctx := context.Background()
	if _, err := v.ValidateCreate(ctx, ref("pr-1", "app")); err != nil {
		t.Errorf("a Project the cache has not seen yet, allowing the namespace: refused: %v", err)
	}
	for _, project := range []string{"closed", "nothing"} {
		if _, err := v.ValidateCreate(ctx, ref("pr-2", project)); err == nil || !strings.Contains(err.Error(), "allowedEnvironmentNamespaces") {
			t.Errorf("Project %s, which the API server shows not allowing team-a: err = %v, want refused", project, err)
		}
	}
}
