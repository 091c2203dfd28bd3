// Package layout checks the architecture the folders promise (docs/development.md, "Layout"): the kit
// knows no system, a system knows no other system, builders do not import the manager (not even through
// the packages they import), nothing below controllers/ is imported by the layers under it, and
// production code does not import test infrastructure. It reads import declarations with go/parser, so it
// needs no build.
package layout

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
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

// apiOf is the API folder each system's closure may hold: its own group's types.
var apiOf = map[string]string{
	"internal/irc": "api/irc", "internal/catalyst": "api/catalyst", "internal/iot": "api/iot", "internal/homelab": "api/homelab",
}

// managerImports are the controller-runtime packages that carry the manager (its root package re-exports
// pkg/manager and pkg/builder; pkg/builder and pkg/webhook build on the manager): a builder or client that
// reaches one of them pulls the manager, the webhook server and their dependencies into every binary and
// test that uses it.
var managerImports = []string{
	"sigs.k8s.io/controller-runtime/pkg/manager", "sigs.k8s.io/controller-runtime/pkg/webhook",
	"sigs.k8s.io/controller-runtime/pkg/builder",
}

// imports are one package's imports: prod and all are the module-local ones (prod of its non-test files,
// all of all its files, without the module prefix), foreign the others of its non-test files.
type imports struct {
	prod, all, foreign []string
}

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

// closureViolations lists what breaks the transitive rule for dir, given the imports of every package:
// a builder or client (a non-fixture package of a system or internal/postgres) must not reach
// internal/kit/manager through the packages it imports, no package it reaches may import
// controller-runtime's root package or a package of managerImports, and the only API group it may reach is
// its own system's (internal/postgres, shared by two systems, none). Only non-test imports count: a test
// may use what its package may not.
func closureViolations(dir string, pkgs map[string]imports) []string {
	if systemOf(dir) == "" && !under(dir, "internal/postgres") || isTestInfra(dir) {
		return nil
	}
	// via records how the walk first reached each package, for the path in the message.
	via := map[string]string{dir: ""}
	queue := []string{dir}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range pkgs[p].prod {
			if _, seen := via[imp]; !seen {
				via[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	route := func(p string) string {
		hops := []string{p}
		for q := via[p]; q != ""; q = via[q] {
			hops = append(hops, q)
		}
		slices.Reverse(hops)
		return strings.Join(hops, " -> ")
	}
	var out []string
	for _, p := range slices.Sorted(maps.Keys(via)) {
		switch {
		case p == "internal/kit/manager":
			out = append(out, fmt.Sprintf("%s reaches internal/kit/manager (%s): builders and clients do not pull in the manager", dir, route(p)))
		case under(p, "api") && !under(p, apiOf[systemOf(dir)]):
			out = append(out, fmt.Sprintf("%s reaches %s (%s): a system's closure holds no other system's API group", dir, p, route(p)))
		}
		for _, imp := range pkgs[p].foreign {
			if imp == "sigs.k8s.io/controller-runtime" || slices.ContainsFunc(managerImports, func(m string) bool { return under(imp, m) }) {
				out = append(out, fmt.Sprintf("%s reaches %s, which imports %s (%s): builders and clients do not pull in the manager", dir, p, imp, route(p)))
			}
		}
	}
	return out
}

// scan reads the imports of every package under root.
func scan(t *testing.T, root string) map[string]imports {
	t.Helper()
	pkgs := map[string]imports{}
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
			test := strings.HasSuffix(p, "_test.go")
			if !strings.HasPrefix(imp, module) {
				if !test && !slices.Contains(entry.foreign, imp) {
					entry.foreign = append(entry.foreign, imp)
				}
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if !test && !slices.Contains(entry.prod, imp) {
				entry.prod = append(entry.prod, imp)
			}
			if !slices.Contains(entry.all, imp) {
				entry.all = append(entry.all, imp)
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
	reached := 0
	for dir, imps := range pkgs {
		for _, v := range violations(dir, imps.prod, imps.all) {
			t.Error(v)
		}
		for _, v := range closureViolations(dir, pkgs) {
			t.Error(v)
		}
		if systemOf(dir) != "" && slices.Contains(imps.prod, "internal/kit/labels") {
			reached++
		}
	}
	if reached == 0 {
		t.Error("no builder imports internal/kit/labels; the walk read no module-local imports")
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

// TestClosureViolations is the positive control of the transitive rule: each case is refused through the
// packages in between, and the same tree without that hop (or for a package the rule leaves alone)
// passes.
func TestClosureViolations(t *testing.T) {
	// tree is a builder, internal/irc/ergo, importing hop, which imports what next says.
	tree := func(next imports) map[string]imports {
		return map[string]imports{
			"internal/irc/ergo":          {prod: []string{"internal/kit/hop", "api/irc/v1alpha1"}},
			"internal/kit/hop":           next,
			"internal/kit/manager":       {foreign: []string{"sigs.k8s.io/controller-runtime"}},
			"internal/kit/labels":        {},
			"api/irc/v1alpha1":           {},
			"api/homelab/v1":             {},
			"internal/irc/ergo/ergotest": {prod: []string{"internal/kit/manager"}},
		}
	}
	tests := []struct {
		name string
		dir  string
		next imports // what internal/kit/hop imports
		want string  // "" when allowed
	}{
		{"a builder reaches the manager through two hops", "internal/irc/ergo",
			imports{prod: []string{"internal/kit/manager"}}, "reaches internal/kit/manager (internal/irc/ergo -> internal/kit/hop -> internal/kit/manager)"},
		{"the same builder without that hop", "internal/irc/ergo", imports{prod: []string{"internal/kit/labels"}}, ""},
		{"a package in the closure imports controller-runtime's root", "internal/irc/ergo",
			imports{foreign: []string{"sigs.k8s.io/controller-runtime"}}, "imports sigs.k8s.io/controller-runtime ("},
		{"a package in the closure imports the webhook server's admission", "internal/irc/ergo",
			imports{foreign: []string{"sigs.k8s.io/controller-runtime/pkg/webhook/admission"}}, "pkg/webhook/admission"},
		{"a package in the closure imports pkg/manager", "internal/irc/ergo",
			imports{foreign: []string{"sigs.k8s.io/controller-runtime/pkg/manager"}}, "pkg/manager"},
		{"the same package importing the client and reconcile packages", "internal/irc/ergo",
			imports{foreign: []string{"sigs.k8s.io/controller-runtime/pkg/client", "sigs.k8s.io/controller-runtime/pkg/reconcile"}}, ""},
		{"a system reaches another system's API group", "internal/irc/ergo",
			imports{prod: []string{"api/homelab/v1"}}, "reaches api/homelab/v1 (internal/irc/ergo -> internal/kit/hop -> api/homelab/v1)"},
		{"a system reaches its own API group", "internal/irc/ergo", imports{prod: []string{"api/irc/v1alpha1"}}, ""},
		{"a fixture package reaches the manager", "internal/irc/ergo/ergotest", imports{}, ""},
		{"a controller reaches the manager", "controllers/irc", imports{}, ""},
		{"only a test reaches the manager", "internal/irc/ergo", imports{all: []string{"internal/kit/manager"}}, ""},
		{"a cycle ends", "internal/irc/ergo", imports{prod: []string{"internal/irc/ergo"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkgs := tree(tt.next)
			pkgs["controllers/irc"] = imports{prod: []string{"internal/kit/manager"}}
			got := strings.Join(closureViolations(tt.dir, pkgs), "\n")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("closureViolations = %q, want %q", got, tt.want)
			}
		})
	}

	// internal/postgres, which two systems share, may reach no API group at all.
	pkgs := map[string]imports{"internal/postgres": {prod: []string{"api/homelab/v1"}}, "api/homelab/v1": {}}
	if got := strings.Join(closureViolations("internal/postgres", pkgs), "\n"); !strings.Contains(got, "reaches api/homelab/v1") {
		t.Errorf("internal/postgres reaching api/homelab: %q", got)
	}
	pkgs["internal/postgres"] = imports{prod: []string{"internal/kit/labels"}}
	if got := closureViolations("internal/postgres", pkgs); len(got) != 0 {
		t.Errorf("internal/postgres reaching the kit's labels: %q", got)
	}
}
