package catalyst

import (
	"slices"
	"testing"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
)

func TestImageReference(t *testing.T) {
	tests := []struct {
		name   string
		build  *catalystv1.ProjectBuild
		commit string
		want   string
	}{
		{"no build", nil, fullSHA, ""},
		{"no commit", &catalystv1.ProjectBuild{Registry: "ghcr.io"}, "", ""},
		{"repository from the project", &catalystv1.ProjectBuild{Registry: "ghcr.io"}, "a1b2c3d", "ghcr.io/team/web:a1b2c3d"},
		{"repository named", &catalystv1.ProjectBuild{Registry: "127.0.0.1:5000", Repository: "org/apps/web"}, fullSHA,
			"127.0.0.1:5000/org/apps/web:" + fullSHA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := catalysttest.Project("team", "web")
			p.Spec.Build = tt.build
			if got := ImageReference(p, tt.commit); got != tt.want {
				t.Fatalf("ImageReference = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFullCommit(t *testing.T) {
	for commit, want := range map[string]bool{
		"a1b2c3d": false, fullSHA: true, fullSHA + "0123456789abcdef01234567": true, fullSHA[:39]: false,
	} {
		if got := FullCommit(commit); got != want {
			t.Errorf("FullCommit(%q) = %v, want %v", commit, got, want)
		}
	}
}

func TestPlainHTTP(t *testing.T) {
	insecure := []string{"registry.lan", "10.0.0.5:5000", " Mirror.Example.com "}
	tests := []struct {
		registry string
		want     bool
	}{
		{"127.0.0.1:5000", true},
		{"127.1.2.3", true},
		{"localhost:5000", true},
		{"[::1]:5000", true},
		{"ghcr.io", false},
		{"registry.lan:443", true},
		{"registry.lan", true},
		{"10.0.0.5:5000", true},
		{"10.0.0.5:6000", false},
		{"10.0.0.6", false},
		{"mirror.example.com", true},
		{"evil-localhost.example.com", false},
		{"registry.local", false},
	}
	for _, tt := range tests {
		if got := PlainHTTP(tt.registry, insecure); got != tt.want {
			t.Errorf("PlainHTTP(%q) = %v, want %v", tt.registry, got, tt.want)
		}
	}
}

func TestBuilderImageAndRegistries(t *testing.T) {
	if got := BuilderImage(""); got != DefaultBuilderImage {
		t.Errorf("BuilderImage() = %q", got)
	}
	if got := BuilderImage(" mirror.example.com/kaniko@sha256:abc "); got != "mirror.example.com/kaniko@sha256:abc" {
		t.Errorf("BuilderImage(related) = %q", got)
	}
	if got := SplitRegistries(" a:5000, ,b ,"); !slices.Equal(got, []string{"a:5000", "b"}) {
		t.Errorf("SplitRegistries = %q", got)
	}
	if got := SplitRegistries(""); got != nil {
		t.Errorf("SplitRegistries(empty) = %q", got)
	}
}
