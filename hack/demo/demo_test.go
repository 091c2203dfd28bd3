package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// TestDemo runs `make demo DEMO_ARGS=-only=irc` the way CI would, stopping as soon as it is up: the full
// local cluster (from $KUBEBUILDER_ASSETS, as `make test` sets it, else bin/k8s), the operator binary, the
// sample network becoming Ready, and a clean stop that leaves nothing running. Missing binaries fail it.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the full local cluster and the operator")
	}
	root := testutil.RepoRoot(t)
	irc, err := selectScenarios(registry, "irc")
	if err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	var out bytes.Buffer
	code := run(options{
		root:        root,
		operator:    operatorBinary(t, root),
		operatorLog: filepath.Join(logDir, "operator.log"),
		logDir:      logDir,
		exitAfter:   time.Millisecond,
		wait:        60 * time.Second,
		scenarios:   irc,
		out:         &out,
	})
	got := out.String()
	if code != 0 {
		t.Fatalf("the demo exited with %d:\n%s", code, got)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^######## Scenario 1 of 1, irc: `),
		regexp.MustCompile(`(?m)^    ErgoNetwork default/my-network +applied `),
		regexp.MustCompile(`(?m)^    status\.observedGeneration 1 = metadata\.generation after \d+\.\ds$`),
		regexp.MustCompile(`(?m)^    DeploymentAvailable=True after `),
		regexp.MustCompile(`(?m)^    Certificate my-network: Ready=True \(set by the demo\)$`),
		regexp.MustCompile(`(?m)^    Ready=True after `),
		regexp.MustCompile(`(?m)^    my-network +my-network\.irc\.example\.com +MyNetwork +True `),
		regexp.MustCompile(`(?m)^    Deployment/my-network +apps/v1$`),
		regexp.MustCompile(`(?m)^    my-network-\S+ +1/1 +Running +\S+ +kwok-node `),
		regexp.MustCompile(`(?m)^    network: *$`),
		regexp.MustCompile(`(?m)^    Ready is True: `),
		regexp.MustCompile(`(?m)^    irc +ErgoNetwork default/my-network +Ready=True +\d+\.\ds after the apply$`),
		regexp.MustCompile(`(?m)^    nothing left behind: `),
	} {
		if !want.MatchString(got) {
			t.Errorf("the output has no line matching %s", want)
		}
	}
	if strings.Contains(got, "ERROR") {
		t.Errorf("the output reports an error")
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}

// operatorBinary is $OPERATOR_BINARY (make sets it to bin/platform-operator), else a fresh build.
func operatorBinary(t *testing.T, root string) string {
	if p := os.Getenv("OPERATOR_BINARY"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "platform-operator")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}
