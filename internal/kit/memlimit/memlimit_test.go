package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestFromCgroup(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"max\n", 0, false},
		{"", 0, false},
		{"536870912\n", 483183820, false}, // 512 MiB -> 90%
		{"268435456", 241591910, false},
		{"lots", 0, true},
		{"-1", 0, true},
	}
	for _, tt := range tests {
		got, err := FromCgroup(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("FromCgroup(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSet(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	dir := t.TempDir()
	file := filepath.Join(dir, "memory.max")
	if err := os.WriteFile(file, []byte("268435456\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Setenv("GOMEMLIMIT", "")
	got, err := Set(file)
	if err != nil || got != 241591910 || debug.SetMemoryLimit(-1) != 241591910 {
		t.Errorf("Set = %d, %v; runtime limit %d", got, err, debug.SetMemoryLimit(-1))
	}
	if got, err := Set(filepath.Join(dir, "missing")); got != 0 || err != nil {
		t.Errorf("no cgroup file: Set = %d, %v", got, err)
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(old)
	if got, err := Set(file); got != 0 || err != nil || debug.SetMemoryLimit(-1) != old {
		t.Errorf("GOMEMLIMIT set: Set = %d, %v, and the runtime limit changed", got, err)
	}
}
