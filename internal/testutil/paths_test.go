package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindRepoRoot(t *testing.T) {
	root := t.TempDir()
	nested := filepath.Join(root, "hack", "tools", "kube")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), "module "+ModulePath+"\n\ngo 1.26.0\n")
	write(filepath.Join(nested, "go.mod"), "module "+ModulePath+"/hack/tools/kube\n")

	for _, start := range []string{root, nested} {
		got, err := FindRepoRoot(start)
		if err != nil || got != root {
			t.Errorf("FindRepoRoot(%s) = %s, %v; want %s", start, got, err, root)
		}
	}
	if _, err := FindRepoRoot(t.TempDir()); err == nil {
		t.Error("FindRepoRoot outside the repository succeeded")
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Errorf("ports %v: each must be positive and distinct", ports)
		}
		seen[p] = true
	}
	if len(ports) != 3 {
		t.Errorf("%d ports, want 3", len(ports))
	}
}
