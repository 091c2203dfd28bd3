// Package layout checks the architecture the folders promise (docs/development.md, "Layout"): the kit
// knows no system, a system knows no other system, builders do not import the manager, nothing below
// controllers/ is imported by the layers under it, and production code does not import test
// infrastructure. It reads import declarations with go/parser, so it needs no build.
package layout

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

const module = testutil.ModulePath + "/"

// systems are the folders under internal/ that hold one system's builders, clients and fixtures.
var systems = []string{"internal/irc", "internal/catalyst", "internal/iot", "internal/homelab"}

// topLevel is what `ls internal` shows: the four systems, the kit, the Postgres client two systems share,
// and the test infrastructure.
var topLevel = []string{"catalyst", "homelab", "iot", "irc", "kit", "postgres", "testutil"}

// under says whether dir is root or below it.
func under(dir, root string) bool { return dir == root || strings.HasPrefix(dir, root+"/") }

// systemOf is the system folder dir belongs to, or "".
func systemOf(dir string) string {
	for _, s := range systems {
		if under(dir, s) {
			return s
		}
	}
	return ""
}

// isTestInfra says whether dir is test infrastructure: internal/testutil, a fixture package
// (<name>test), or a test/ suite.
func isTestInfra(dir string) bool {
	return under(dir, "internal/testutil") || under(dir, "test") || strings.HasSuffix(path.Base(dir), "test")
}

// violations lists every import that breaks the layering rules; prod are the imports of a package's
// non-test files, all those of all its files.
func violations(dir string, prod, all []string) []string {
	var out []string
	bad := func(imp, why string) { out = append(out, fmt.Sprintf("%s imports %s: %s", dir, imp, why)) }
	for _, imp := range all {
		switch {
		case (under(dir, "internal") || under(dir, "api")) && under(imp, "controllers"):
			bad(imp, "controllers/ is the top layer")
		case under(dir, "internal/kit") && (systemOf(imp) != "" || under(imp, "internal/postgres")) && !isTestInfra(imp):
			// The kit's tests may use a system's fixtures as sample objects; nothing else of a system.
			bad(imp, "the kit knows no system")
		case systemOf(dir) != "" && systemOf(imp) != "" && systemOf(imp) != systemOf(dir):
			bad(imp, "a system knows no other system")
		}
	}
	for _, imp := range prod {
		switch {
		case under(dir, "api") && under(imp, "internal"):
			// api/'s own tests (admission against the builders, envtest with the scheme) may look up.
			bad(imp, "api/ is the bottom layer")
		case !isTestInfra(dir) && isTestInfra(imp) && !under(dir, "hack"):
			bad(imp, "production code does not import test infrastructure")
		case (systemOf(dir) != "" || under(dir, "internal/postgres")) && !isTestInfra(dir) && imp == "internal/kit/manager":
			bad(imp, "builders and clients import internal/kit/labels, not the manager")
		}
	}
	return out
}

// scan reads the module-local imports of every package under root.
func scan(t *testing.T, root string) map[string][2][]string {
	t.Helper()
	pkgs := map[string][2][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "bin" || rel == ".git" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := path.Dir(rel)
		entry := pkgs[dir]
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if !strings.HasSuffix(p, "_test.go") && !slices.Contains(entry[0], imp) {
				entry[0] = append(entry[0], imp)
			}
			if !slices.Contains(entry[1], imp) {
				entry[1] = append(entry[1], imp)
			}
		}
		pkgs[dir] = entry
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestTheTreeKeepsItsLayers(t *testing.T) {
	root, err := testutil.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := scan(t, root)
	if len(pkgs) < 50 {
		t.Fatalf("read %d packages; the walk missed the tree", len(pkgs))
	}
	for dir, imps := range pkgs {
		for _, v := range violations(dir, imps[0], imps[1]) {
			t.Error(v)
		}
	}

	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.IsDir() {
			got = append(got, e.Name())
		} else {
			t.Errorf("internal/%s: internal/ holds folders only", e.Name())
		}
	}
	if !slices.Equal(got, topLevel) {
		t.Errorf("ls internal = %v, want %v (update docs/development.md and this test together)", got, topLevel)
	}
}

// TestViolations is the positive control: each rule refuses the import it is about, and lets the same
// package import what it may.
func TestViolations(t *testing.T) {
	tests := []struct {
		name      string
		dir       string
		prod, all []string
		want      string // "" when allowed
	}{
		{"the kit imports the kit", "internal/kit/reconcile", []string{"internal/kit/apply"}, []string{"internal/kit/apply"}, ""},
		{"the kit imports a system", "internal/kit/scheme", []string{"internal/homelab/domain"}, []string{"internal/homelab/domain"}, "the kit knows no system"},
		{"the kit imports the Postgres client", "internal/kit/metrics", nil, []string{"internal/postgres"}, "the kit knows no system"},
		{"a system imports itself, the kit and postgres", "internal/irc/soju", []string{"internal/irc/ircnet", "internal/kit/labels", "internal/postgres"}, []string{"internal/irc/ircnet"}, ""},
		{"a system imports another", "internal/irc/soju", nil, []string{"internal/homelab/redis"}, "a system knows no other system"},
		{"internal imports controllers", "internal/postgres", nil, []string{"controllers/homelab"}, "controllers/ is the top layer"},
		{"api imports internal", "api/irc/v1alpha1", []string{"internal/irc/ergo"}, []string{"internal/irc/ergo"}, "api/ is the bottom layer"},
		{"api's tests import builders", "api/irc/v1alpha1", nil, []string{"internal/irc/ergo"}, ""},
		{"the kit's tests use a system's fixtures", "internal/kit/reconcile", nil, []string{"internal/irc/ergo/ergotest"}, ""},
		{"the kit's tests use a system's builders", "internal/kit/reconcile", nil, []string{"internal/irc/ergo"}, "the kit knows no system"},
		{"a builder imports the manager", "internal/irc/ergo", []string{"internal/kit/manager"}, []string{"internal/kit/manager"}, "not the manager"},
		{"a builder's test imports the manager", "internal/irc/ergo", nil, []string{"internal/kit/manager"}, ""},
		{"a controller imports the manager", "controllers/irc", []string{"internal/kit/manager"}, []string{"internal/kit/manager"}, ""},
		{"production code imports a fixture", "controllers/irc", []string{"internal/irc/ergo/ergotest"}, nil, "test infrastructure"},
		{"production code imports the local cluster", "internal/kit/manager", []string{"internal/testutil/localcluster"}, nil, "test infrastructure"},
		{"a test imports the local cluster", "controllers/irc", nil, []string{"internal/testutil/localcluster"}, ""},
		{"the demo imports fixtures", "hack/demo", []string{"internal/irc/ergo/ergotest"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(violations(tt.dir, tt.prod, tt.all), "\n")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("violations = %q, want %q", got, tt.want)
			}
		})
	}
}
