package bundle

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/homelab/authentik"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
)

// defaultImages are the operator's Go defaults by relatedImages name; RELATED_IMAGE_<NAME> overrides each.
var defaultImages = map[string]string{
	"ergo": ergo.DefaultImage, "soju": soju.DefaultImage, "authentik": authentik.DefaultImage,
	"kaniko": catalyst.DefaultBuilderImage,
}

// releaseTag is a tag that names one release (x.y.z, optionally v-prefixed and suffixed), not a moving
// tag such as stable, latest or v2.
var releaseTag = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+._][0-9A-Za-z._-]+)?$`)

// releaseProblem says why an image does not name one release: it has neither a digest nor a release
// tag. Empty when it does.
func releaseProblem(image string) string {
	if strings.Contains(image, "@sha256:") {
		return ""
	}
	slash, colon := strings.LastIndex(image, "/"), strings.LastIndex(image, ":")
	if colon <= slash {
		return fmt.Sprintf("%s has no tag, which means latest", image)
	}
	if tag := image[colon+1:]; !releaseTag.MatchString(tag) {
		return fmt.Sprintf("%s names the moving tag %q, not a release (x.y.z) or a digest", image, tag)
	}
	return ""
}

// relatedImageProblems lists every way the CSV's relatedImages, the operator container's RELATED_IMAGE_*
// env and the Go defaults fail to name the same images: a mirror rewrites the env from relatedImages, and
// the operator falls back to the defaults, so any disagreement deploys an image nobody mirrored.
func relatedImageProblems(related []operatorsv1alpha1.RelatedImage, env []corev1.EnvVar, defaults map[string]string) []string {
	var problems []string
	relatedByName := map[string]string{}
	for _, ri := range related {
		if _, dup := relatedByName[ri.Name]; dup {
			problems = append(problems, fmt.Sprintf("relatedImages lists %q twice", ri.Name))
		}
		relatedByName[ri.Name] = ri.Image
	}
	envByName := map[string]corev1.EnvVar{}
	for _, e := range env {
		if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
			envByName[e.Name] = e
		}
	}
	names := make([]string, 0, len(defaults))
	for name := range defaults {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		image := defaults[name]
		envName := "RELATED_IMAGE_" + strings.ToUpper(name)
		switch e, ok := envByName[envName]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is not set; the default is %s", envName, image))
		case e.ValueFrom != nil || e.Value != image:
			problems = append(problems, fmt.Sprintf("%s is %q, the Go default is %s", envName, e.Value, image))
		}
		switch ri, ok := relatedByName[name]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("relatedImages has no %q; the default is %s", name, image))
		case ri != image:
			problems = append(problems, fmt.Sprintf("relatedImages %q is %s, the Go default is %s", name, ri, image))
		}
		if p := releaseProblem(image); p != "" {
			problems = append(problems, name+": "+p)
		}
	}
	for envName := range envByName {
		if _, ok := defaults[strings.ToLower(strings.TrimPrefix(envName, "RELATED_IMAGE_"))]; !ok {
			problems = append(problems, fmt.Sprintf("%s has no Go default", envName))
		}
	}
	for name := range relatedByName {
		if _, ok := defaults[name]; !ok {
			problems = append(problems, fmt.Sprintf("relatedImages %q has no Go default", name))
		}
	}
	slices.Sort(problems)
	return problems
}

// TestRelatedImagesAgree: the shipped bundle's relatedImages, its Deployment's RELATED_IMAGE_* env and
// the Go defaults name the same images, each one release.
func TestRelatedImagesAgree(t *testing.T) {
	csv := loadCSV(t)
	for _, p := range relatedImageProblems(csv.Spec.RelatedImages, operatorContainer(t, csv).Env, defaultImages) {
		t.Error(p)
	}
}

// TestRelatedImageProblems is the check itself, on bundles that disagree.
func TestRelatedImageProblems(t *testing.T) {
	defaults := map[string]string{"ergo": "ghcr.io/ergochat/ergo:v2.14.0", "kaniko": "gcr.io/k/executor:v1.23.2"}
	goodRelated := func() []operatorsv1alpha1.RelatedImage {
		return []operatorsv1alpha1.RelatedImage{
			{Name: "ergo", Image: "ghcr.io/ergochat/ergo:v2.14.0"}, {Name: "kaniko", Image: "gcr.io/k/executor:v1.23.2"},
		}
	}
	goodEnv := func() []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: "RELATED_IMAGE_ERGO", Value: "ghcr.io/ergochat/ergo:v2.14.0"},
			{Name: "RELATED_IMAGE_KANIKO", Value: "gcr.io/k/executor:v1.23.2"},
			{Name: "WATCH_NAMESPACE"},
		}
	}
	tests := []struct {
		name     string
		related  func([]operatorsv1alpha1.RelatedImage) []operatorsv1alpha1.RelatedImage
		env      func([]corev1.EnvVar) []corev1.EnvVar
		defaults map[string]string
		want     []string
	}{
		{name: "agree"},
		{name: "env pinned, relatedImages not", want: []string{`RELATED_IMAGE_ERGO is "ghcr.io/ergochat/ergo@sha256:` + strings.Repeat("a", 64) + `", the Go default is ghcr.io/ergochat/ergo:v2.14.0`},
			env: func(e []corev1.EnvVar) []corev1.EnvVar {
				e[0].Value = "ghcr.io/ergochat/ergo@sha256:" + strings.Repeat("a", 64)
				return e
			}},
		{name: "relatedImages on another version", want: []string{`relatedImages "ergo" is ghcr.io/ergochat/ergo:v2.15.0, the Go default is ghcr.io/ergochat/ergo:v2.14.0`},
			related: func(r []operatorsv1alpha1.RelatedImage) []operatorsv1alpha1.RelatedImage {
				r[0].Image = "ghcr.io/ergochat/ergo:v2.15.0"
				return r
			}},
		{name: "env missing", want: []string{"RELATED_IMAGE_KANIKO is not set; the default is gcr.io/k/executor:v1.23.2"},
			env: func(e []corev1.EnvVar) []corev1.EnvVar { return slices.Delete(e, 1, 2) }},
		{name: "related image missing", want: []string{`relatedImages has no "kaniko"; the default is gcr.io/k/executor:v1.23.2`},
			related: func(r []operatorsv1alpha1.RelatedImage) []operatorsv1alpha1.RelatedImage { return r[:1] }},
		{name: "extra env and related image", want: []string{"RELATED_IMAGE_SOJU has no Go default", `relatedImages "soju" has no Go default`},
			env: func(e []corev1.EnvVar) []corev1.EnvVar {
				return append(e, corev1.EnvVar{Name: "RELATED_IMAGE_SOJU", Value: "soju:v0.9.0"})
			},
			related: func(r []operatorsv1alpha1.RelatedImage) []operatorsv1alpha1.RelatedImage {
				return append(r, operatorsv1alpha1.RelatedImage{Name: "soju", Image: "soju:v0.9.0"})
			}},
		{name: "duplicate related image", want: []string{`relatedImages lists "ergo" twice`},
			related: func(r []operatorsv1alpha1.RelatedImage) []operatorsv1alpha1.RelatedImage { return append(r, r[0]) }},
		{name: "env from a field", want: []string{`RELATED_IMAGE_ERGO is "", the Go default is ghcr.io/ergochat/ergo:v2.14.0`},
			env: func(e []corev1.EnvVar) []corev1.EnvVar {
				e[0] = corev1.EnvVar{Name: "RELATED_IMAGE_ERGO", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
				return e
			}},
		{name: "default on a moving tag, agreeing everywhere", defaults: map[string]string{"ergo": "ghcr.io/ergochat/ergo:stable", "kaniko": "gcr.io/k/executor:v1.23.2"},
			want: []string{`ergo: ghcr.io/ergochat/ergo:stable names the moving tag "stable", not a release (x.y.z) or a digest`},
			env: func(e []corev1.EnvVar) []corev1.EnvVar {
				e[0].Value = "ghcr.io/ergochat/ergo:stable"
				return e
			},
			related: func(r []operatorsv1alpha1.RelatedImage) []operatorsv1alpha1.RelatedImage {
				r[0].Image = "ghcr.io/ergochat/ergo:stable"
				return r
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			related, env, d := goodRelated(), goodEnv(), defaults
			if tt.related != nil {
				related = tt.related(related)
			}
			if tt.env != nil {
				env = tt.env(env)
			}
			if tt.defaults != nil {
				d = tt.defaults
			}
			got := relatedImageProblems(related, env, d)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestReleaseProblem(t *testing.T) {
	tests := []struct {
		image string
		ok    bool
	}{
		{"ghcr.io/ergochat/ergo:v2.14.0", true},
		{"ghcr.io/goauthentik/server:2025.2.3", true},
		{"registry.example.com:5000/ergo:v2.14.0-debian", true},
		{"ghcr.io/ergochat/ergo@sha256:" + strings.Repeat("0", 64), true},
		{"ghcr.io/ergochat/ergo:stable", false},
		{"ghcr.io/ergochat/ergo:latest", false},
		{"ghcr.io/ergochat/ergo:v2", false},
		{"ghcr.io/ergochat/ergo", false},
		{"registry.example.com:5000/ergo", false},
	}
	for _, tt := range tests {
		if got := releaseProblem(tt.image); (got == "") != tt.ok {
			t.Errorf("releaseProblem(%q) = %q, want ok %t", tt.image, got, tt.ok)
		}
	}
}
