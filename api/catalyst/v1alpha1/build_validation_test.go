package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
)

func TestProjectBuildAdmission(t *testing.T) {
	build := func(mutate func(*catalystv1.ProjectBuild)) func(*catalystv1.Project) {
		return func(p *catalystv1.Project) {
			p.Spec.Build = &catalystv1.ProjectBuild{Registry: "ghcr.io"}
			mutate(p.Spec.Build)
		}
	}
	tests := []struct {
		name   string
		mutate func(*catalystv1.Project)
		want   string
	}{
		{"a registry with a port, a repository, Secrets, a Dockerfile and a context", func(p *catalystv1.Project) {
			p.Spec.Source.SecretRef = &catalystv1.LocalObjectReference{Name: "git-token"}
			p.Spec.Build = &catalystv1.ProjectBuild{Registry: "registry.example.com:5000", Repository: "team/apps/web_v2",
				RegistrySecretRef: &catalystv1.LocalObjectReference{Name: "push"}, Dockerfile: "docker/Dockerfile.prod",
				Context: "services/web", TimeoutSeconds: 600}
		}, ""},
		{"an IPv4 registry", build(func(b *catalystv1.ProjectBuild) { b.Registry = "127.0.0.1:5000" }), ""},
		{"no registry", build(func(b *catalystv1.ProjectBuild) { b.Registry = "" }), "spec.build.registry"},
		{"a registry with a scheme", build(func(b *catalystv1.ProjectBuild) { b.Registry = "https://ghcr.io" }), "registry must be a host name"},
		{"a registry with a path", build(func(b *catalystv1.ProjectBuild) { b.Registry = "ghcr.io/org" }), "registry must be a host name"},
		{"an uppercase repository", build(func(b *catalystv1.ProjectBuild) { b.Repository = "Team/Web" }), "repository must be lowercase"},
		{"a repository ending in '/'", build(func(b *catalystv1.ProjectBuild) { b.Repository = "team/" }), "repository must be lowercase"},
		{"a Dockerfile outside the repository", build(func(b *catalystv1.ProjectBuild) { b.Dockerfile = "../Dockerfile" }), "dockerfile must be relative"},
		{"an absolute context", build(func(b *catalystv1.ProjectBuild) { b.Context = "/src" }), "context must be relative"},
		{"a timeout under a minute", build(func(b *catalystv1.ProjectBuild) { b.TimeoutSeconds = 30 }), "spec.build.timeoutSeconds"},
		{"a registry Secret without a name", build(func(b *catalystv1.ProjectBuild) { b.RegistrySecretRef = &catalystv1.LocalObjectReference{} }),
			"spec.build.registrySecretRef.name"},
		{"a git Secret name that is not a name", func(p *catalystv1.Project) {
			p.Spec.Source.SecretRef = &catalystv1.LocalObjectReference{Name: "Git Token"}
		}, "spec.source.secretRef.name"},
		{"a registry name too long", build(func(b *catalystv1.ProjectBuild) { b.Registry = strings.Repeat("r", 260) }), "spec.build.registry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := catalysttest.Project("default", "my-project")
			tt.mutate(p)
			check(t, p, tt.want)
		})
	}
}

func TestProjectBuildDefaults(t *testing.T) {
	p := catalysttest.Project("default", "built")
	p.Spec.Build = &catalystv1.ProjectBuild{Registry: "ghcr.io"}
	if err := c.Create(context.Background(), p, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	b := p.Spec.Build
	if b.Dockerfile != "Dockerfile" || b.Context != "." || b.TimeoutSeconds != 1800 || b.Repository != "" {
		t.Fatalf("build defaults: %+v", b)
	}
}
