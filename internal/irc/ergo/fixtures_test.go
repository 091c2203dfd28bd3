package ergo

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// minimalNetwork is ergotest's minimal network with a fixed UID, which the golden files show.
func minimalNetwork() *ircv1.ErgoNetwork {
	n := ergotest.MinimalNetwork("irc", "tiny")
	n.UID = "0b5e6a3c-tiny"
	return n
}

// referenceNetwork is the reference sample (ergotest.ReferenceNetwork) with a fixed UID.
func referenceNetwork() *ircv1.ErgoNetwork {
	n := ergotest.ReferenceNetwork("irc-josie-cloud")
	n.UID = "6f1c2d7e-my-network"
	return n
}

// checkGolden compares got with testdata/name, or rewrites the file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatalf("write %s: %v", file, err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s (run go test -update to create it): %v", file, err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is intended)\n--- got\n%s", file, got)
	}
}
