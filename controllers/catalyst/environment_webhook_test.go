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
	"github.com/platform-operator/platform-operator/internal/scheme"
)

// The validator's decisions on their own, against a cache stand-in with the same index; the envtest suite
// and e2e prove the API server calls it.
func TestEnvironmentValidator(t *testing.T) {
	existing := catalysttest.Environment("team-web", "pr-1", "team", "web")
	existing.UID = "uid-existing"
	existing.Status.Namespace = "team-web-pr-1"
	reader := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(existing).
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
		{"delete", func() error { _, err := v.ValidateDelete(ctx, twin); return err }, ""},
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
