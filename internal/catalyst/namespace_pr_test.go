package catalyst

import (
	"testing"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
)

// The pull request's number is a fact about the namespace, kept in an annotation (a label would invite
// selecting on it, and it says nothing the namespace's name does not already tell apart).
func TestNamespacePRNumber(t *testing.T) {
	tests := []struct {
		name string
		pr   int64
		want string // "" is no annotation
	}{
		{"a pull request's preview", 123, "123"},
		{"a large number", 9007199254740993, "9007199254740993"},
		{"no pull request", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := catalysttest.Environment("team-web", "pr-1", "team", "web")
			env.Spec.Source.PRNumber = tt.pr
			ns := Namespace(env, PartsOf(env), "team-web-pr-1")
			got, ok := ns.Annotations[catalystv1.AnnotationPRNumber]
			if tt.want == "" && ok {
				t.Fatalf("annotation %s = %q, want none", catalystv1.AnnotationPRNumber, got)
			}
			if tt.want != "" && got != tt.want {
				t.Fatalf("annotation %s = %q, want %q", catalystv1.AnnotationPRNumber, got, tt.want)
			}
			if _, ok := ns.Labels[catalystv1.AnnotationPRNumber]; ok {
				t.Fatal("the pull request's number is a label")
			}
		})
	}
}
