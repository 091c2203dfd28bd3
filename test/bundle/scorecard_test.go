package bundle

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"sigs.k8s.io/yaml"
)

const (
	scorecardImage    = "ghcr.io/platform-operator/platform-operator-scorecard"
	scorecardCommand  = "platform-operator-scorecard"
	scorecardPackage  = "./test/scorecard/cmd/platform-operator-scorecard"
	scorecardDocker   = "test/scorecard/Dockerfile"
	upstreamScorecard = "quay.io/operator-framework/scorecard-test"
)

// TestScorecardConfig: the bundle's scorecard configuration runs operator-sdk's tests from the image of
// the operator-sdk version hack/tools pins, and ours from the image of this version.
func TestScorecardConfig(t *testing.T) {
	cfg := &scapiv1alpha3.Configuration{}
	if err := yaml.UnmarshalStrict(readFile(t, "bundle/tests/scorecard/config.yaml"), cfg); err != nil {
		t.Fatal(err)
	}
	sdk := requiredVersion(t, "hack/tools/operator-sdk/go.mod", "github.com/operator-framework/operator-sdk")
	ours := fmt.Sprintf("%s:v%s", scorecardImage, loadCSV(t).Spec.Version)
	n := 0
	for _, stage := range cfg.Stages {
		for _, test := range stage.Tests {
			n++
			repo, _, _ := strings.Cut(test.Image, ":")
			switch {
			case repo == upstreamScorecard && test.Image != upstreamScorecard+":"+sdk:
				t.Errorf("test %s runs %s, want the tag of the pinned operator-sdk %s", test.Labels["test"], test.Image, sdk)
			case repo == scorecardImage && test.Image != ours:
				t.Errorf("test %s runs %s, want %s (make bundle sets it)", test.Labels["test"], test.Image, ours)
			case repo != upstreamScorecard && repo != scorecardImage:
				t.Errorf("test %s runs an image neither operator-sdk nor we build: %s", test.Labels["test"], test.Image)
			}
			if repo == scorecardImage && (len(test.Entrypoint) != 2 || test.Entrypoint[0] != scorecardCommand) {
				t.Errorf("test %s entrypoint %q, want [%s <test>]", test.Labels["test"], test.Entrypoint, scorecardCommand)
			}
		}
	}
	if n == 0 {
		t.Error("the scorecard configuration has no tests")
	}
}

// TestScorecardDockerfile: test/scorecard/Dockerfile builds the entry point the way test/scorecard
// builds the binary it runs (static, -trimpath), from every package it imports, into the PATH of a
// distroless non-root image.
func TestScorecardDockerfile(t *testing.T) {
	root := repoRoot(t)
	stages := parseDockerfile(t, scorecardDocker)
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a builder and the final image", len(stages))
	}
	builder, final := stages[0], stages[1]
	if want := "golang:" + goModVersion(t, "go.mod"); builder.BaseName != want {
		t.Errorf("builder FROM %s, want %s (go.mod's go version)", builder.BaseName, want)
	}
	if final.BaseName != "gcr.io/distroless/static:nonroot" {
		t.Errorf("final FROM %s, want gcr.io/distroless/static:nonroot", final.BaseName)
	}

	var copied []string
	built := false
	for _, c := range builder.Commands {
		switch c := c.(type) {
		case *instructions.CopyCommand:
			for _, src := range c.SourcePaths {
				copied = append(copied, strings.TrimSuffix(src, "/"))
			}
		case *instructions.RunCommand:
			line := strings.Join(c.CmdLine, " ")
			if strings.Contains(line, "go build") {
				built = strings.Contains(line, "CGO_ENABLED=0") && strings.Contains(line, "-trimpath") &&
					strings.Contains(line, "-o "+scorecardCommand) && strings.HasSuffix(line, scorecardPackage)
			}
		}
	}
	if !built {
		t.Errorf("the builder does not run CGO_ENABLED=0 go build -trimpath -o %s %s", scorecardCommand, scorecardPackage)
	}
	var entry []string
	installed := false
	user := ""
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.EntrypointCommand:
			entry = c.CmdLine
		case *instructions.CopyCommand:
			installed = installed || c.From == "builder" && c.DestPath == "/usr/local/bin/"+scorecardCommand
		case *instructions.UserCommand:
			user = c.User
		}
	}
	if !installed || !slices.Equal(entry, []string{"/usr/local/bin/" + scorecardCommand}) {
		t.Errorf("the image must hold the entry point in /usr/local/bin (scorecard runs entrypoint[0] from PATH); ENTRYPOINT %q", entry)
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.Trim(user, "0123456789:") != "" {
		t.Errorf("USER %q, want a numeric non-root user", user)
	}

	ignore := dockerignore(t, filepath.Join(root, scorecardDocker+".dockerignore"))
	for _, f := range append(sourceFiles(t, root), "go.mod", "go.sum") {
		inCopy := slices.ContainsFunc(copied, func(c string) bool { return f == c || strings.HasPrefix(f, c+"/") })
		if !inCopy {
			t.Errorf("%s is needed by the entry point but no COPY brings it in", f)
		}
		if excluded, err := ignore.MatchesOrParentMatches(f); err != nil || excluded {
			t.Errorf("%s is needed by the entry point but %s.dockerignore leaves it out", f, scorecardDocker)
		}
	}
}

// sourceFiles are the Go files (tests aside) of every package of this module the entry point imports,
// relative to the repository root.
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}\t{{join .GoFiles \",\"}}{{end}}{{end}}", scorecardPackage)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var files []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		dir, names, _ := strings.Cut(line, "\t")
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range strings.Split(names, ",") {
			files = append(files, filepath.ToSlash(filepath.Join(rel, n)))
		}
	}
	if len(files) == 0 {
		t.Fatal("go list found no source files")
	}
	return files
}

func dockerignore(t *testing.T, path string) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
