package catalyst

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzNamespaceName: whatever the web application puts in the labels, the namespace is a valid DNS label
// of at most 63 characters (or empty when every part sanitizes to nothing), the same every time, and a
// joined name that fits is kept whole; label values are always valid.
func FuzzNamespaceName(f *testing.F) {
	f.Add("my-team", "my-project", "pr-123")
	f.Add("Équipe Ünïcode", "Projet/Été", "PR #42")
	f.Add(strings.Repeat("a", 56), strings.Repeat("b", 10), "")
	f.Add("--", "__", "..")
	f.Add("日本", "チーム", "🚀")
	f.Fuzz(func(t *testing.T, team, project, env string) {
		got := NamespaceName(team, project, env)
		if got != NamespaceName(team, project, env) {
			t.Fatalf("not deterministic for %q %q %q", team, project, env)
		}
		if got == "" {
			for _, p := range []string{team, project, env} {
				if SanitizePart(p) != "" {
					t.Fatalf("empty name although part %q sanitizes to %q", p, SanitizePart(p))
				}
			}
			return
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Fatalf("NamespaceName(%q, %q, %q) = %q: %v", team, project, env, got, errs)
		}
		var kept []string
		for _, p := range []string{team, project, env} {
			if s := SanitizePart(p); s != "" {
				kept = append(kept, s)
			}
		}
		if joined := strings.Join(kept, "-"); len(joined) <= MaxNamespaceLength && got != joined {
			t.Fatalf("a joined name of %d characters must be kept: got %q, want %q", len(joined), got, joined)
		}
		for _, v := range []string{team, project, env} {
			if errs := validation.IsValidLabelValue(LabelValue(v)); len(errs) > 0 {
				t.Fatalf("LabelValue(%q) = %q: %v", v, LabelValue(v), errs)
			}
		}
	})
}
