package backup

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCopyBinary runs the operator's binary's copy-binary, as a backup Job's init container does, and then
// the copy: it must be the same program (its usage answers), and a bad DEST must fail without leaving a
// file.
func TestCopyBinary(t *testing.T) {
	bin := operatorBinary(t)
	dest := filepath.Join(t.TempDir(), "platform-operator")
	if out, err := exec.Command(bin, "backup", "copy-binary", dest).CombinedOutput(); err != nil {
		t.Fatalf("copy-binary: %v: %s", err, out)
	}
	want, _ := os.ReadFile(bin)
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the copy differs from the binary (err %v)", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(dest, "backup", "--help")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || !bytes.Contains(stderr.Bytes(), []byte("backup put")) {
		t.Fatalf("the copy does not run the program: %v: %s", err, stderr.String())
	}
	// Hostile: a destination in a directory that does not exist fails (exit 1), and usage errors exit 2.
	if err := exec.Command(bin, "backup", "copy-binary", filepath.Join(t.TempDir(), "no", "dir", "x")).Run(); err == nil {
		t.Fatal("copy-binary into a missing directory succeeded")
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("copy-binary into a missing directory: %v, want exit 1", err)
	}
	if err := exec.Command(bin, "backup", "copy-binary").Run(); err == nil {
		t.Fatal("copy-binary without DEST succeeded")
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("copy-binary without DEST: %v, want exit 2", err)
	}
}
