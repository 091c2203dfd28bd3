package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

const (
	packageName = "platform-operator"
	csvFile     = packageName + ".clusterserviceversion.yaml"
)

// repoRoot is the root module's directory.
func repoRoot(t testing.TB) string { return testutil.RepoRoot(t) }

func readFile(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// loadBundle reads bundle/ the way OLM's tooling does.
func loadBundle(t testing.TB) *apimanifests.Bundle {
	t.Helper()
	b, err := apimanifests.GetBundleFromDir(filepath.Join(repoRoot(t), "bundle"))
	if err != nil {
		t.Fatalf("read bundle/: %v", err)
	}
	if b.CSV == nil {
		t.Fatal("bundle/ has no ClusterServiceVersion")
	}
	return b
}

// loadCSV decodes the bundle's CSV strictly: a field the type does not know is an error.
func loadCSV(t testing.TB) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.UnmarshalStrict(readFile(t, "bundle/manifests/"+csvFile), csv); err != nil {
		t.Fatalf("decode the CSV: %v", err)
	}
	return csv
}

// bundleAnnotations is bundle/metadata/annotations.yaml.
func bundleAnnotations(t testing.TB) map[string]string {
	t.Helper()
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, "bundle/metadata/annotations.yaml"), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Annotations
}

// parseDockerfile parses a Dockerfile with BuildKit's parser and fails on any parse warning or lint
// finding, the checks `docker build` prints.
func parseDockerfile(t *testing.T, rel string) []instructions.Stage {
	t.Helper()
	res, err := parser.Parse(bytes.NewReader(readFile(t, rel)))
	if err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s: parser warning: %s", rel, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		t.Errorf("%s:%d: BuildKit lint %s: %s", rel, line, rule, msg)
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	return stages
}

// goModVersion is the `go` directive of a go.mod, as major.minor.
func goModVersion(t *testing.T, rel string) string {
	t.Helper()
	for _, line := range strings.Split(string(readFile(t, rel)), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			parts := strings.SplitN(strings.TrimSpace(v), ".", 3)
			return parts[0] + "." + parts[1]
		}
	}
	t.Fatalf("%s has no go directive", rel)
	return ""
}

// requiredVersion is the version a go.mod requires of a module.
func requiredVersion(t *testing.T, rel, module string) string {
	t.Helper()
	for _, line := range strings.Split(string(readFile(t, rel)), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("%s does not require %s", rel, module)
	return ""
}
