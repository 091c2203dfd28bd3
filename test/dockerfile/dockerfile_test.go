package dockerfile

import (
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"sigs.k8s.io/yaml"
)

// goImageSpec is an image built from one main package of this module: its Dockerfile and what it must build.
type goImageSpec struct {
	// dockerfile is the Dockerfile, relative to the repository root (the build context).
	dockerfile string
	// pkg is the main package the image must build, as `go build` names it from the module root.
	pkg string
	// what names the binary in messages.
	what string
}

var (
	managerSpec    = goImageSpec{dockerfile: "Dockerfile", pkg: ".", what: "the manager"}
	fleetAgentSpec = goImageSpec{dockerfile: "fleet-agent.Dockerfile", pkg: "./cmd/fleet-agent", what: "the fleet agent"}
	// goImages are the images built from Go packages, each checked the same way.
	goImages = []goImageSpec{managerSpec, fleetAgentSpec}
)

// goImage is what the test reads from such a Dockerfile: the stage that builds the binary, the final stage
// and the `go build` between them.
type goImage struct {
	goImageSpec
	root       string
	builder    instructions.Stage
	builderIdx int
	final      instructions.Stage
	// copies are the builder stage's COPY instructions from the build context, with the WORKDIR of each.
	copies []contextCopy
	// buildEnv is the environment of `go build`: the stage's ENV and the command's own assignments.
	buildEnv []string
	// buildArgs are the words after `go`, variables expanded for the machine running the test.
	buildArgs []string
	build     goBuild
	// buildDir is the WORKDIR `go build` runs in.
	buildDir string
	// order is the builder's instructions by kind, to check that modules are downloaded before sources come in.
	order []string
}

type contextCopy struct {
	cmd     *instructions.CopyCommand
	workdir string
}

// buildArgs are the values BuildKit gives the automatic platform arguments for a native build on this machine.
func buildArgs() env {
	return env{
		"TARGETOS": "linux", "TARGETARCH": runtime.GOARCH, "TARGETPLATFORM": "linux/" + runtime.GOARCH,
		"BUILDOS": "linux", "BUILDARCH": runtime.GOARCH, "BUILDPLATFORM": "linux/" + runtime.GOARCH,
	}
}

// readGoImage reads spec's Dockerfile from the repository, or from file when it is not empty.
func readGoImage(t *testing.T, spec goImageSpec, file string) goImage {
	t.Helper()
	root := repoRoot(t)
	if file == "" {
		file = filepath.Join(root, spec.dockerfile)
	}
	stages, _ := parseDockerfile(t, file)
	m := goImage{goImageSpec: spec, root: root, final: stages[len(stages)-1], builderIdx: -1}

	for i, st := range stages {
		workdir := "/"
		var stageEnv []string
		var copies []contextCopy
		var order []string
		for _, c := range st.Commands {
			switch c := c.(type) {
			case *instructions.WorkdirCommand:
				workdir = resolve(workdir, c.Path)
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					stageEnv = append(stageEnv, kv.Key+"="+kv.Value)
				}
			case *instructions.CopyCommand:
				if c.From == "" {
					copies = append(copies, contextCopy{cmd: c, workdir: workdir})
					order = append(order, "COPY "+strings.Join(c.SourcePaths, " "))
				}
			case *instructions.RunCommand:
				if !c.PrependShell {
					t.Errorf("%s: exec-form RUN %q: use the shell form for build steps", spec.dockerfile, c.CmdLine)
					continue
				}
				for _, sc := range splitRun(t, strings.Join(c.CmdLine, " "), buildArgs()) {
					if len(sc.Args) >= 3 && sc.Args[0] == "go" && sc.Args[1] == "mod" && sc.Args[2] == "download" {
						order = append(order, "RUN go mod download")
					}
					if len(sc.Args) < 2 || sc.Args[0] != "go" || sc.Args[1] != "build" {
						continue
					}
					if m.builderIdx >= 0 {
						t.Fatalf("%s runs `go build` more than once; this test expects one build of %s", spec.dockerfile, spec.what)
					}
					m.builderIdx, m.builder, m.buildDir = i, st, workdir
					m.buildEnv = append(slices.Clone(stageEnv), sc.Env...)
					m.buildArgs = sc.Args[1:]
					m.build = parseGoBuild(t, sc.Args[2:])
					order = append(order, "RUN go build")
				}
			}
		}
		if m.builderIdx == i {
			m.copies, m.order = copies, order
		}
	}
	if m.builderIdx < 0 {
		t.Fatalf("%s: no stage runs `go build`", spec.dockerfile)
	}
	if m.builderIdx == len(stages)-1 {
		t.Fatalf("%s: %s is built in the final stage; build it in a builder stage and copy it out", spec.dockerfile, spec.what)
	}
	return m
}

// envValue is the last value of key in a list of KEY=value assignments.
func envValue(assignments []string, key string) (string, bool) {
	value, found := "", false
	for _, a := range assignments {
		if k, v, _ := strings.Cut(a, "="); k == key {
			value, found = v, true
		}
	}
	return value, found
}

// goModVersion is the major.minor of go.mod's go directive.
func goModVersion(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go\s+(\d+\.\d+)(\.\d+)?\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// splitImage splits an image reference into its name and its tag (or digest when there is no tag).
func splitImage(ref string) (name, tag string) {
	name, digest, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[:i], name[i+1:]
	}
	return name, digest
}

func TestManagerDockerfile(t *testing.T) { checkGoImage(t, readGoImage(t, managerSpec, "")) }

func TestFleetAgentDockerfile(t *testing.T) { checkGoImage(t, readGoImage(t, fleetAgentSpec, "")) }

// packageProblems says what is wrong with the package the Dockerfile's `go build` builds: it must be exactly
// the spec's main package, built from the module root into a named output.
func packageProblems(m goImage) []string {
	var problems []string
	if dir, ok := m.build.Flags["-C"]; ok {
		problems = append(problems, fmt.Sprintf("go build -C %s: build from the module root", dir))
	}
	if m.build.Output == "" {
		problems = append(problems, "go build has no -o: the final stage cannot name the binary it copies")
	}
	want, err := goOutput(m.root, nil, "list", "-f", "{{.ImportPath}} {{.Name}}", m.pkg)
	if err != nil {
		return append(problems, fmt.Sprintf("%s should build %s, which go list cannot load: %v", m.dockerfile, m.pkg, err))
	}
	wantPath, name, _ := strings.Cut(strings.TrimSpace(string(want)), " ")
	if name != "main" {
		problems = append(problems, fmt.Sprintf("%s is package %s, want a main package", m.pkg, name))
	}
	if len(m.build.Packages) != 1 {
		return append(problems, fmt.Sprintf("go build packages = %q, want [%s] (%s)", m.build.Packages, m.pkg, wantPath))
	}
	got, err := goOutput(m.root, nil, "list", "-f", "{{.ImportPath}}", m.build.Packages[0])
	if err != nil {
		return append(problems, fmt.Sprintf("go build %s: go list cannot load it: %v", m.build.Packages[0], err))
	}
	if gotPath := strings.TrimSpace(string(got)); gotPath != wantPath {
		problems = append(problems, fmt.Sprintf("go build %s builds %s, want %s (%s)", m.build.Packages[0], gotPath, wantPath, m.what))
	}
	return problems
}

// userProblems says what is wrong with the final stage's USER: it must be set, numeric (so runAsNonRoot can
// verify it) and not root.
func userProblems(final instructions.Stage) []string {
	var user string
	for _, c := range final.Commands {
		if c, ok := c.(*instructions.UserCommand); ok {
			user = c.User
		}
	}
	numeric := regexp.MustCompile(`^(\d+)(?::(\d+))?$`).FindStringSubmatch(user)
	switch {
	case user == "":
		return []string{"final stage sets no USER"}
	case numeric == nil:
		return []string{fmt.Sprintf("USER %s: use a numeric uid[:gid], so runAsNonRoot can verify it", user)}
	case strings.Trim(numeric[1], "0") == "":
		return []string{fmt.Sprintf("USER %s is root", user)}
	}
	return nil
}

// checkGoImage checks a Go image's Dockerfile: the package it builds, how (static, for Linux, with the Go of
// go.mod, modules cached in their own layer), that the build context holds every file the build reads,
// and the final stage (distroless static, a non-root numeric USER, the binary as exec-form ENTRYPOINT).
func checkGoImage(t *testing.T, m goImage) {
	t.Run("builds the main package", func(t *testing.T) {
		for _, p := range packageProblems(m) {
			t.Error(p)
		}
	})

	t.Run("static linux binary", func(t *testing.T) {
		if v, _ := envValue(m.buildEnv, "CGO_ENABLED"); v != "0" {
			t.Errorf("go build runs with CGO_ENABLED=%q, want 0: distroless/static has no libc", v)
		}
		if v, _ := envValue(m.buildEnv, "GOOS"); v != "linux" {
			t.Errorf("go build runs with GOOS=%q, want linux", v)
		}
	})

	t.Run("builder Go matches go.mod", func(t *testing.T) {
		name, tag := splitImage(m.builder.BaseName)
		if name != "golang" && name != "docker.io/library/golang" {
			t.Fatalf("builder image is %s, want the official golang image", m.builder.BaseName)
		}
		got := regexp.MustCompile(`^\d+\.\d+`).FindString(tag)
		if want := goModVersion(t, m.root); got != want {
			t.Errorf("builder image %s has Go %q, go.mod says go %s", m.builder.BaseName, got, want)
		}
	})

	t.Run("modules are downloaded before the sources are copied", func(t *testing.T) {
		download := slices.Index(m.order, "RUN go mod download")
		if download < 0 {
			t.Fatalf("no `RUN go mod download` layer in the builder; got %q", m.order)
		}
		copiedFirst := map[string]bool{}
		for _, step := range m.order[:download] {
			sources, isCopy := strings.CutPrefix(step, "COPY ")
			for _, src := range strings.Fields(sources) {
				if isCopy && src != "go.mod" && src != "go.sum" {
					t.Errorf("COPY %s comes before `go mod download`: only go.mod and go.sum should, so the module layer stays cached", src)
				}
				copiedFirst[src] = true
			}
		}
		for _, f := range []string{"go.mod", "go.sum"} {
			if !copiedFirst[f] {
				t.Errorf("%s is not copied before `go mod download`", f)
			}
		}
	})

	t.Run("COPY sources exist and keep the repository layout", func(t *testing.T) {
		for _, c := range m.copies {
			for _, src := range c.cmd.SourcePaths {
				rel := path.Clean(src)
				if rel == "." || strings.HasPrefix(rel, "..") || path.IsAbs(rel) {
					t.Errorf("COPY %s: copy named paths of the repository, not the whole context or outside it", src)
					continue
				}
				fi, err := os.Stat(filepath.Join(m.root, filepath.FromSlash(rel)))
				if err != nil {
					t.Errorf("COPY %s: %v", src, err)
					continue
				}
				dest := resolve(c.workdir, c.cmd.DestPath)
				if !fi.IsDir() && (strings.HasSuffix(c.cmd.DestPath, "/") || len(c.cmd.SourcePaths) > 1) {
					dest = path.Join(dest, path.Base(rel))
				}
				if want := path.Join(m.buildDir, rel); dest != want {
					t.Errorf("COPY %s %s lands at %s, want %s: the build directory must mirror the repository", src, c.cmd.DestPath, dest, want)
				}
			}
		}
	})

	t.Run("the build context holds every file the binary is built from", func(t *testing.T) {
		ignore := dockerignore(t, m.root, m.dockerfile)
		var sources []string
		for _, c := range m.copies {
			for _, src := range c.cmd.SourcePaths {
				sources = append(sources, path.Clean(src))
			}
		}
		copied := func(rel string) bool {
			return slices.ContainsFunc(sources, func(src string) bool { return rel == src || strings.HasPrefix(rel, src+"/") })
		}
		notCopied := map[string][]string{} // package directory -> its files no COPY brings in
		for _, rel := range sourceFiles(t, m) {
			if !copied(rel) {
				notCopied[path.Dir(rel)] = append(notCopied[path.Dir(rel)], path.Base(rel))
			}
			if excluded, err := ignore.MatchesOrParentMatches(rel); err != nil {
				t.Fatal(err)
			} else if excluded {
				t.Errorf("%s is needed to build %s but the ignore file of %s leaves it out of the build context", rel, m.what, m.dockerfile)
			}
		}
		for _, dir := range slices.Sorted(maps.Keys(notCopied)) {
			what := "package " + dir
			if dir == "." {
				what = "the module root"
			}
			t.Errorf("%s is built from %s, but no COPY of %s brings in %s", m.what, what, m.dockerfile, strings.Join(notCopied[dir], " "))
		}
	})

	t.Run("final stage is distroless static as non-root", func(t *testing.T) {
		distroless := regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?:nonroot(-[a-z0-9]+)?(@sha256:[0-9a-f]{64})?$`)
		if !distroless.MatchString(m.final.BaseName) {
			t.Errorf("final image is %s, want gcr.io/distroless/static:nonroot", m.final.BaseName)
		}
		for _, c := range m.final.Commands {
			if c, ok := c.(*instructions.RunCommand); ok {
				t.Errorf("final stage runs %q: distroless has no shell to run it", c.CmdLine)
			}
		}
		for _, p := range userProblems(m.final) {
			t.Error(p)
		}
	})

	t.Run("ENTRYPOINT runs the built binary without a shell", func(t *testing.T) {
		binary := resolve(m.buildDir, m.build.Output)
		workdir, installed := "/", ""
		var entrypoint *instructions.EntrypointCommand
		for _, c := range m.final.Commands {
			switch c := c.(type) {
			case *instructions.WorkdirCommand:
				workdir = resolve(workdir, c.Path)
			case *instructions.CopyCommand:
				if c.From != m.builder.Name && c.From != strconv.Itoa(m.builderIdx) {
					continue
				}
				for _, src := range c.SourcePaths {
					if resolve(m.buildDir, src) != binary {
						continue
					}
					installed = resolve(workdir, c.DestPath)
					if c.DestPath == "." || strings.HasSuffix(c.DestPath, "/") || len(c.SourcePaths) > 1 {
						installed = path.Join(installed, path.Base(binary))
					}
				}
			case *instructions.EntrypointCommand:
				entrypoint = c
			case *instructions.CmdCommand:
				if c.PrependShell {
					t.Errorf("CMD %q is in shell form: distroless has no shell", c.CmdLine)
				}
			}
		}
		if installed == "" {
			t.Fatalf("the final stage does not COPY --from=%s %s", m.builder.Name, binary)
		}
		if entrypoint == nil {
			t.Fatal("the final stage has no ENTRYPOINT")
		}
		if entrypoint.PrependShell {
			t.Errorf("ENTRYPOINT %q is in shell form: use the exec form [\"%s\"], distroless has no shell", entrypoint.CmdLine, installed)
		}
		if len(entrypoint.CmdLine) == 0 || entrypoint.CmdLine[0] != installed {
			t.Errorf("ENTRYPOINT %q, want it to start with %s, where the binary is copied", entrypoint.CmdLine, installed)
		}
	})
}

// TestChecksCatchWrongPackageAndRoot proves the checks above fail on what they guard against: each case
// breaks one thing in a copy of an image's Dockerfile.
func TestChecksCatchWrongPackageAndRoot(t *testing.T) {
	tests := []struct {
		name     string
		spec     goImageSpec
		old, new string
		problems func(goImage) []string
	}{
		{"agent Dockerfile builds the manager", fleetAgentSpec, " ./cmd/fleet-agent\n", " .\n", packageProblems},
		{"agent Dockerfile builds another package", fleetAgentSpec, " ./cmd/fleet-agent\n", " ./hack/demo\n", packageProblems},
		{"agent Dockerfile builds a missing package", fleetAgentSpec, " ./cmd/fleet-agent\n", " ./cmd/no-such-agent\n", packageProblems},
		{"manager Dockerfile builds the agent", managerSpec, " -o manager .\n", " -o manager ./cmd/fleet-agent\n", packageProblems},
		{"agent runs as root", fleetAgentSpec, "USER 65532:65532", "USER 0:0", func(m goImage) []string { return userProblems(m.final) }},
		{"agent runs as a named user", fleetAgentSpec, "USER 65532:65532", "USER nonroot", func(m goImage) []string { return userProblems(m.final) }},
		{"agent sets no USER", fleetAgentSpec, "USER 65532:65532\n", "", func(m goImage) []string { return userProblems(m.final) }},
		{"manager runs as root", managerSpec, "USER 65532:65532", "USER root", func(m goImage) []string { return userProblems(m.final) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(repoRoot(t), tt.spec.dockerfile))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tt.old) {
				t.Fatalf("%s no longer holds %q: update this case", tt.spec.dockerfile, tt.old)
			}
			file := filepath.Join(t.TempDir(), filepath.Base(tt.spec.dockerfile))
			if err := os.WriteFile(file, []byte(strings.Replace(string(data), tt.old, tt.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			if problems := tt.problems(readGoImage(t, tt.spec, file)); len(problems) == 0 {
				t.Errorf("no problem found in %s with %q replaced by %q", tt.spec.dockerfile, tt.old, tt.new)
			} else {
				t.Logf("found: %s", strings.Join(problems, "; "))
			}
		})
	}
}

// TestImagesBuildWithDockerfileFlags builds each Go image's binary with its Dockerfile's own environment and
// flags, so a change that breaks an image build (cgo, a build tag, a missing package) fails here.
func TestImagesBuildWithDockerfileFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the manager and agent binaries")
	}
	for _, spec := range goImages {
		t.Run(spec.dockerfile, func(t *testing.T) { buildWithDockerfileFlags(t, readGoImage(t, spec, "")) })
	}
}

func buildWithDockerfileFlags(t *testing.T, m goImage) {
	out := filepath.Join(t.TempDir(), path.Base(m.build.Output))
	var args []string
	for i := 0; i < len(m.buildArgs); i++ {
		switch a := m.buildArgs[i]; {
		case a == "-a":
			// -a only forces a rebuild of every package; the image build starts from an empty cache anyway,
			// and here it would throw the build cache away.
		case a == "-o":
			args = append(args, "-o", out)
			i++
		case strings.HasPrefix(a, "-o="):
			args = append(args, "-o="+out)
		default:
			args = append(args, a)
		}
	}
	t.Logf("%s go %s", strings.Join(m.buildEnv, " "), strings.Join(args, " "))
	goCmd(t, m.root, m.buildEnv, args...)

	f, err := elf.Open(out)
	if err != nil {
		t.Fatalf("the built %s is not an ELF binary: %v", m.what, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (has an ELF interpreter): it cannot start on distroless/static", m.what)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil {
		t.Fatal(err)
	} else if len(libs) > 0 {
		t.Errorf("%s needs shared libraries %q: it cannot start on distroless/static", m.what, libs)
	}
}

// sourceFiles lists, relative to the repository, every file of the root module that the image's build
// reads: go.mod, go.sum and the Go and embedded files of each local package in the main package's import
// graph, as the Dockerfile's GOOS, GOARCH and CGO_ENABLED select them.
func sourceFiles(t *testing.T, m goImage) []string {
	t.Helper()
	var env []string
	for _, k := range []string{"CGO_ENABLED", "GOOS", "GOARCH", "GOFLAGS"} {
		if v, ok := envValue(m.buildEnv, k); ok {
			env = append(env, k+"="+v)
		}
	}
	var tags []string
	if v, ok := m.build.Flags["-tags"]; ok {
		tags = []string{"-tags", v}
	}
	out := goCmd(t, m.root, env, append(append([]string{"list", "-deps", "-json"}, tags...), m.pkg)...)

	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			Dir, ImportPath string
			Module          *struct{ Main bool }
			Error           *struct{ Err string }
			GoFiles         []string
			CgoFiles        []string
			EmbedFiles      []string
			SFiles          []string
			HFiles          []string
			SysoFiles       []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Error != nil {
			t.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(m.root, p.Dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("package %s in %s is outside the repository", p.ImportPath, p.Dir)
		}
		for _, group := range [][]string{p.GoFiles, p.CgoFiles, p.EmbedFiles, p.SFiles, p.HFiles, p.SysoFiles} {
			for _, f := range group {
				files = append(files, path.Join(filepath.ToSlash(rel), f))
			}
		}
	}
	if len(files) == 2 {
		t.Fatalf("go list found no package of this module in the import graph of %s", m.what)
	}
	return files
}

// dockerignore reads the ignore file BuildKit applies to the build context of dockerfile: <dockerfile>.dockerignore
// when it exists, else .dockerignore; no file means nothing is excluded.
func dockerignore(t *testing.T, root, dockerfile string) *patternmatcher.PatternMatcher {
	t.Helper()
	file := filepath.Join(root, dockerfile+".dockerignore")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(root, ".dockerignore")
	}
	var patterns []string
	if f, err := os.Open(file); err == nil {
		defer func() { _ = f.Close() }()
		if patterns, err = ignorefile.ReadAll(f); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pm
}

func TestBundleDockerfile(t *testing.T) {
	root := repoRoot(t)
	stages, _ := parseDockerfile(t, filepath.Join(root, "bundle.Dockerfile"))
	if len(stages) != 1 || stages[0].BaseName != "scratch" {
		t.Fatalf("bundle.Dockerfile must be a single FROM scratch stage; got %d stages from %s", len(stages), stages[0].BaseName)
	}
	labels := map[string]string{}
	copies := map[string]string{} // destination directory -> source
	for _, c := range stages[0].Commands {
		switch c := c.(type) {
		case *instructions.LabelCommand:
			for _, kv := range c.Labels {
				labels[kv.Key] = kv.Value
			}
		case *instructions.CopyCommand:
			if len(c.SourcePaths) != 1 {
				t.Errorf("COPY %q: copy one bundle directory at a time", c.SourcePaths)
				continue
			}
			src := path.Clean(c.SourcePaths[0])
			if !strings.HasPrefix(src, "bundle/") {
				t.Errorf("COPY %s: bundle content comes from bundle/", src)
			}
			copies[strings.TrimPrefix(path.Clean(c.DestPath), "/")] = src
		default:
			t.Errorf("bundle.Dockerfile: unexpected %s: a bundle image holds only labels and files", c.Name())
		}
	}

	const prefix = "operators.operatorframework.io."
	want := map[string]string{
		prefix + "bundle.mediatype.v1": "registry+v1",
		prefix + "bundle.manifests.v1": "manifests/",
		prefix + "bundle.metadata.v1":  "metadata/",
		prefix + "bundle.package.v1":   "platform-operator",
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("LABEL %s=%q, want %q", k, labels[k], v)
		}
	}
	channels := strings.Split(labels[prefix+"bundle.channels.v1"], ",")
	if def := labels[prefix+"bundle.channel.default.v1"]; def == "" || !slices.Contains(channels, def) {
		t.Errorf("default channel %q is not one of the bundle's channels %q", def, channels)
	}
	for _, k := range []string{"bundle.manifests.v1", "bundle.metadata.v1", "test.config.v1"} {
		dir, ok := labels[prefix+k]
		if !ok {
			continue
		}
		if _, ok := copies[path.Clean(dir)]; !ok {
			t.Errorf("LABEL %s%s=%s, but nothing is copied to /%s", prefix, k, dir, dir)
		}
	}

	t.Run("labels match bundle/metadata/annotations.yaml and the bundle is in the build context", func(t *testing.T) {
		// make bundle generates bundle/metadata and make verify proves it is committed: missing is a failure.
		data, err := os.ReadFile(filepath.Join(root, "bundle", "metadata", "annotations.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Annotations map[string]string `json:"annotations"`
		}
		if err := yaml.UnmarshalStrict(data, &doc); err != nil {
			t.Fatalf("annotations.yaml: %v", err)
		}
		for k, v := range doc.Annotations {
			if got, ok := labels[k]; !ok {
				t.Errorf("annotation %s=%s has no LABEL in bundle.Dockerfile", k, v)
			} else if got != v {
				t.Errorf("LABEL %s=%s, annotations.yaml says %s", k, got, v)
			}
		}
		for k, v := range labels {
			if _, ok := doc.Annotations[k]; !ok && strings.HasPrefix(k, prefix) {
				t.Errorf("LABEL %s=%s is missing from annotations.yaml", k, v)
			}
		}
		ignore := dockerignore(t, root, "bundle.Dockerfile")
		for dest, src := range copies {
			files := 0
			err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(src)), func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				files++
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				if excluded, err := ignore.MatchesOrParentMatches(filepath.ToSlash(rel)); err != nil {
					return err
				} else if excluded {
					t.Errorf("COPY %s /%s: the .dockerignore leaves %s out of the build context", src, dest, rel)
				}
				return nil
			})
			if err != nil {
				t.Errorf("COPY %s /%s: %v", src, dest, err)
			} else if files == 0 {
				t.Errorf("COPY %s /%s: no files to copy", src, dest)
			}
		}
	})
}
