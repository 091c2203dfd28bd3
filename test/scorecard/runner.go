package scorecard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"sigs.k8s.io/yaml"
)

const (
	// bundleRoot is where scorecard mounts the bundle in a test pod, and where the entry points read it.
	bundleRoot = "/bundle"
	// binDir is where a test image keeps its entry point; the pod runs entrypoint[0] from its PATH.
	binDir = "/usr/local/bin"
	// testConfigLabel is the bundle annotation naming the directory of the scorecard configuration.
	testConfigLabel = "operators.operatorframework.io.test.config.v1"
)

// Runner runs scorecard tests as local processes.
type Runner struct {
	// Images maps each test image of the configuration to the local executable of its entry point. A
	// test whose image is not in the map is an error, never skipped.
	Images map[string]string
	// Env is the tests' environment, as a scorecard pod would set it (SCORECARD_NAMESPACE) plus what
	// stands in for the pod's service account (KUBECONFIG=/kubeconfig with Files["kubeconfig"]).
	Env []string
	// Files are written into each test's root, by path relative to it.
	Files map[string][]byte
}

// Result is what one test reported.
type Result struct {
	Test   scapiv1alpha3.TestConfiguration
	Status scapiv1alpha3.TestStatus
	// Stderr is the entry point's standard error.
	Stderr string
	// Err says why the test printed no TestStatus (it could not start, or it exited non-zero).
	Err error
}

// Passed tells whether the test ran and every result it reported passed.
func (r Result) Passed() bool {
	if r.Err != nil || len(r.Status.Results) == 0 {
		return false
	}
	for _, res := range r.Status.Results {
		if res.State != scapiv1alpha3.PassState {
			return false
		}
	}
	return true
}

// Name is the test's name as the configuration labels it (the entry point's argument otherwise).
func (r Result) Name() string {
	if n := r.Test.Labels["test"]; n != "" {
		return n
	}
	return strings.Join(r.Test.Entrypoint, " ")
}

func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s):", r.Name(), r.Test.Image)
	if r.Err != nil {
		fmt.Fprintf(&b, " %v", r.Err)
	}
	for _, res := range r.Status.Results {
		fmt.Fprintf(&b, " %s %s", res.Name, res.State)
		for _, e := range res.Errors {
			fmt.Fprintf(&b, "\n    error: %s", e)
		}
		for _, s := range res.Suggestions {
			fmt.Fprintf(&b, "\n    suggestion: %s", s)
		}
	}
	if r.Err != nil && r.Stderr != "" {
		fmt.Fprintf(&b, "\n    stderr: %s", strings.TrimSpace(r.Stderr))
	}
	return b.String()
}

// Configuration reads the scorecard configuration a bundle directory names in its annotations.
func Configuration(bundleDir string) (*scapiv1alpha3.Configuration, error) {
	data, err := os.ReadFile(filepath.Join(bundleDir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, err
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("metadata/annotations.yaml: %w", err)
	}
	dir, ok := meta.Annotations[testConfigLabel]
	if !ok {
		return nil, fmt.Errorf("metadata/annotations.yaml has no %s annotation", testConfigLabel)
	}
	data, err = os.ReadFile(filepath.Join(bundleDir, filepath.FromSlash(dir), "config.yaml"))
	if err != nil {
		return nil, err
	}
	cfg := &scapiv1alpha3.Configuration{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("scorecard configuration: %w", err)
	}
	if cfg.Kind != scapiv1alpha3.ConfigurationKind || cfg.APIVersion != scapiv1alpha3.GroupVersion.String() {
		return nil, fmt.Errorf("scorecard configuration is %s %s, want %s %s", cfg.APIVersion, cfg.Kind,
			scapiv1alpha3.GroupVersion, scapiv1alpha3.ConfigurationKind)
	}
	return cfg, nil
}

// Run runs every test of every stage of the bundle's scorecard configuration, in order, each in a root of
// its own.
func (r Runner) Run(ctx context.Context, bundleDir string) ([]Result, error) {
	cfg, err := Configuration(bundleDir)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, stage := range cfg.Stages {
		for _, test := range stage.Tests {
			results = append(results, r.runTest(ctx, bundleDir, test))
		}
	}
	return results, nil
}

func (r Runner) runTest(ctx context.Context, bundleDir string, test scapiv1alpha3.TestConfiguration) Result {
	res := Result{Test: test}
	exe, ok := r.Images[test.Image]
	if !ok {
		res.Err = fmt.Errorf("no local entry point for image %s", test.Image)
		return res
	}
	if len(test.Entrypoint) == 0 || strings.Contains(test.Entrypoint[0], "/") {
		res.Err = fmt.Errorf("entrypoint %q: want a command name from the image's PATH and its arguments", test.Entrypoint)
		return res
	}
	root, err := os.MkdirTemp("", "scorecard-root-")
	if err != nil {
		res.Err = err
		return res
	}
	defer os.RemoveAll(root)
	if err := r.populate(root, bundleDir, exe, test.Entrypoint[0]); err != nil {
		res.Err = fmt.Errorf("prepare the test's root: %w", err)
		return res
	}

	cmd := exec.CommandContext(ctx, path.Join(binDir, test.Entrypoint[0]))
	cmd.Args = test.Entrypoint
	cmd.Env = append([]string{"PATH=" + binDir, "HOME=/"}, r.Env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = sandbox(root)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	res.Stderr = stderr.String()
	if err != nil {
		res.Err = fmt.Errorf("run %q: %w", test.Entrypoint, err)
		return res
	}
	if err := json.Unmarshal(stdout.Bytes(), &res.Status); err != nil {
		res.Err = fmt.Errorf("the test printed no TestStatus: %w; output: %s", err, stdout.String())
	}
	return res
}

// populate lays out a test's root like the test pod's file system: the bundle at /bundle, the entry
// point in /usr/local/bin, and r.Files. Everything is world-readable, because the test runs as nobody.
func (r Runner) populate(root, bundleDir, exe, command string) error {
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	if err := copyTree(bundleDir, filepath.Join(root, bundleRoot)); err != nil {
		return err
	}
	bin := filepath.Join(root, binDir)
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	if err := linkOrCopy(exe, filepath.Join(bin, command), 0o755); err != nil {
		return err
	}
	for name, data := range r.Files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
		return fmt.Errorf("%s: only regular files and directories belong in a bundle", p)
	})
}

// linkOrCopy hard-links src to dst (the executables are tens of megabytes), or copies it when they are
// on different file systems.
func linkOrCopy(src, dst string, mode os.FileMode) error {
	if err := os.Link(src, dst); err == nil {
		return os.Chmod(dst, mode)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

// ErrNoSandbox is returned on systems where tests cannot run in a root of their own.
var ErrNoSandbox = errors.New("running scorecard entry points in a private root needs Linux")
