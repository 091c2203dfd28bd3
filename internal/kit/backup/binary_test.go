package backup

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// operatorBinary is $OPERATOR_BINARY (make test sets it to bin/platform-operator), else a fresh build of
// the operator: the program is tested through main.go's dispatch, as a Job runs it.
func operatorBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("OPERATOR_BINARY"); p != "" {
		return p
	}
	wd, _ := os.Getwd()
	root, err := testutil.FindRepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "platform-operator")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return bin
}

// TestOperatorBinary runs `platform-operator backup` from the operator's binary: a put and a get through
// main.go's dispatch, the usage, and a put stopped by SIGTERM while its producer still writes, which
// must exit 1 and leave the artifact incomplete (the producer's process group is killed with it).
func TestOperatorBinary(t *testing.T) {
	bin := operatorBinary(t)
	cfg, _ := newBucket(t, server, "binary")
	storeFile := writeStoreFile(t, cfg)
	id := func(n string) []string {
		return []string{"--store-config", storeFile, "--namespace", "team-a", "--kind", "ErgoNetwork", "--name", "irc", "--id", n}
	}
	run := func(stdin []byte, args ...string) (int, string, string) {
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"backup"}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errOut
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	ircdDB := "*3\r\n$3\r\nset\r\n$16\r\naccount.exists a\r\n$1\r\n1\r\n" // put --format buntdb counts it
	if code, _, stderr := run([]byte(ircdDB), append([]string{"put", "--format", "buntdb"}, id("1")...)...); code != 0 {
		t.Fatalf("put: exit %d: %s", code, stderr)
	}
	if code, out, stderr := run(nil, append([]string{"get"}, id("1")...)...); code != 0 || out != ircdDB {
		t.Fatalf("get: exit %d %q: %s", code, out, stderr)
	}
	if code, _, stderr := run(nil); code != 2 || !strings.Contains(stderr, "platform-operator backup put") {
		t.Fatalf("no arguments: exit %d: %s", code, stderr)
	}

	// SIGTERM while the producer (a shell whose child keeps the pipe open) is still writing.
	// The minute is a bound for a hung put (a producer's child holding the pipe), not a timing assertion.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{"backup", "put"}, id("2")...),
		"--", "sh", "-c", "head -c 20000000 /dev/zero; sleep 600")...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // let the upload begin; the assertion below does not depend on it
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("put did not end within a minute of SIGTERM: %s", errOut.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("put after SIGTERM: exit %d, want 1: %s", code, errOut.String())
	}
	t.Logf("put after SIGTERM: %s", strings.TrimSpace(errOut.String()))
	if code, _, stderr := run(nil, append([]string{"get"}, id("2")...)...); code != 1 || !strings.Contains(stderr, "not complete") {
		t.Fatalf("get of the interrupted artifact: exit %d: %s", code, stderr)
	}
}
