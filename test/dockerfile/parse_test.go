package dockerfile

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// repoRoot is the root module's directory.
func repoRoot(t testing.TB) string { return testutil.RepoRoot(t) }

// parseDockerfile parses a Dockerfile with BuildKit's own parser and fails the test on any parse error,
// parser warning or BuildKit lint finding (the checks `docker build` prints as warnings).
func parseDockerfile(t *testing.T, file string) ([]instructions.Stage, []instructions.ArgCommand) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s: parser warning: %s", file, w.Short)
	}
	var findings []string
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		findings = append(findings, fmt.Sprintf("%s:%d: %s: %s", filepath.Base(file), line, rule, msg))
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("parse instructions of %s: %v", file, err)
	}
	for _, f := range findings {
		t.Errorf("BuildKit lint: %s", f)
	}
	if len(stages) == 0 {
		t.Fatalf("%s has no FROM", file)
	}
	return stages, metaArgs
}

// env is a shell.EnvGetter over a map: the build arguments a RUN line is expanded with.
type env map[string]string

func (e env) Get(k string) (string, bool) { v, ok := e[k]; return v, ok }

func (e env) Keys() []string {
	keys := make([]string, 0, len(e))
	for k := range e {
		keys = append(keys, k)
	}
	return keys
}

// shellCommand is one simple command of a shell-form RUN line: its leading VAR=value assignments and words.
type shellCommand struct {
	Env  []string
	Args []string
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// splitRun splits a shell-form RUN line into simple commands at &&, || and ;, expanding variables from args.
// It handles what Dockerfiles use (quotes, escapes, ${VAR:-default}), not pipelines or subshells.
func splitRun(t *testing.T, line string, args env) []shellCommand {
	t.Helper()
	line = strings.NewReplacer("&&", " && ", "||", " || ", ";", " ; ").Replace(line)
	words, err := shell.NewLex('\\').ProcessWords(line, args)
	if err != nil {
		t.Fatalf("split RUN %q: %v", line, err)
	}
	var cmds []shellCommand
	cur := shellCommand{}
	flush := func() {
		if len(cur.Env)+len(cur.Args) > 0 {
			cmds = append(cmds, cur)
		}
		cur = shellCommand{}
	}
	for _, w := range words {
		switch {
		case w == "&&" || w == "||" || w == ";":
			flush()
		case len(cur.Args) == 0 && assignment.MatchString(w):
			cur.Env = append(cur.Env, w)
		default:
			cur.Args = append(cur.Args, w)
		}
	}
	flush()
	return cmds
}

// goBuildValueFlags are the go build flags that take a value as the next word.
var goBuildValueFlags = map[string]bool{
	"-C": true, "-o": true, "-p": true, "-asmflags": true, "-buildmode": true, "-compiler": true,
	"-gccgoflags": true, "-gcflags": true, "-installsuffix": true, "-ldflags": true, "-mod": true,
	"-modfile": true, "-overlay": true, "-pgo": true, "-pkgdir": true, "-tags": true, "-toolexec": true,
	"-covermode": true, "-coverpkg": true,
}

// goBuild is a parsed `go build` command line.
type goBuild struct {
	Flags    map[string]string // flag -> value ("" for booleans)
	Output   string            // -o
	Packages []string
}

func parseGoBuild(t *testing.T, args []string) goBuild {
	t.Helper()
	b := goBuild{Flags: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			b.Packages = append(b.Packages, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.Replace(a, "--", "-", 1), "=")
		if goBuildValueFlags[name] && !hasValue {
			if i+1 >= len(args) {
				t.Fatalf("go build flag %s has no value", name)
			}
			i++
			value = args[i]
		}
		b.Flags[name] = value
	}
	b.Output = b.Flags["-o"]
	return b
}

// resolve makes p absolute against the stage's working directory, as the Dockerfile does.
func resolve(workdir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(workdir, p)
}

// goCmd runs go with extra environment in dir and returns its standard output.
func goCmd(t *testing.T, dir string, extraEnv []string, args ...string) []byte {
	t.Helper()
	out, err := goOutput(dir, extraEnv, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goOutput runs go with extra environment in dir and returns its standard output, or an error with its
// standard error.
func goOutput(dir string, extraEnv []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}
