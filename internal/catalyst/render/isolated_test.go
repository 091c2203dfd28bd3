package render

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeChart writes a chart named web with one template into a new checkout, and returns it.
func writeChart(t *testing.T, template string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"chart/templates/configmap.yaml": template,
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func chartInput() Input {
	return Input{Path: "chart", Namespace: "team-web-pr-1", Release: "pr-1", Labels: map[string]string{"catalyst.dev/deployed-by": "pr-1"}}
}

// configMaps renders n ConfigMaps of a kilobyte each, in a range loop.
func configMaps(n int) string {
	return `{{- range $i := until ` + strconv.Itoa(n) + ` }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{{ $i }}
data:
  fill: {{ repeat 1024 "x" | quote }}
{{- end }}
`
}

// children are the running processes whose parent is this one.
func children(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so the fields after its ')' count.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[1] == me && fields[0] != "Z" {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestIsolatedByteLimit: a chart whose output exceeds the byte limit fails with ErrTooLarge, stopped at
// the limit; a smaller one renders.
func TestIsolatedByteLimit(t *testing.T) {
	limits := Limits{MaxBytes: 256 << 10, Timeout: time.Minute}
	_, err := Isolated(context.Background(), limits, TypeHelm, writeChart(t, configMaps(400)), chartInput())
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "exceeds 256 KiB") {
		t.Fatalf("400 ConfigMaps of 1 KiB under 256 KiB: err %v, want ErrTooLarge naming the limit", err)
	}
	if c := children(t); len(c) != 0 {
		t.Errorf("render processes left running: %v", c)
	}

	// Control: 100 ConfigMaps fit.
	r, err := Isolated(context.Background(), limits, TypeHelm, writeChart(t, configMaps(100)), chartInput())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 100 || r.Objects[0].GetLabels()["catalyst.dev/deployed-by"] != "pr-1" {
		t.Fatalf("%d objects, labels %v; want 100 labelled", len(r.Objects), r.Objects[0].GetLabels())
	}
	if r.Chart == nil || r.Chart.Name() != "web" {
		t.Fatalf("chart %+v: want the chart web for Helm's install", r.Chart)
	}

	// Kustomize and manifests are held to the same limit.
	dir := t.TempDir()
	var b strings.Builder
	for i := range 400 {
		b.WriteString("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-" + strconv.Itoa(i) + "\ndata:\n  fill: " + strings.Repeat("x", 1024) + "\n")
	}
	if err := os.MkdirAll(filepath.Join(dir, "deploy"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "deploy", "all.yaml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	in := Input{Path: "deploy", Namespace: "team-web-pr-1"}
	if _, err := Isolated(context.Background(), limits, TypeManifests, dir, in); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("400 KiB of manifests under 256 KiB: err %v, want ErrTooLarge", err)
	}
	if _, err := Isolated(context.Background(), Limits{MaxBytes: 1 << 20}, TypeManifests, dir, in); err != nil {
		t.Fatalf("400 KiB of manifests under 1 MiB: %v", err)
	}
}

// TestIsolatedTimeoutStops: a chart that would render for ever times out, and then nothing of it runs:
// no render process is left, and the goroutines are as many as before.
func TestIsolatedTimeoutStops(t *testing.T) {
	forever := `{{- range $i := until 100000 }}{{ range $j := until 100000 }}{{ range $k := until 100000 }}{{ end }}{{ end }}{{ end }}`
	goroutines := runtime.NumGoroutine()
	began := time.Now()
	_, err := Isolated(context.Background(), Limits{Timeout: 2 * time.Second}, TypeHelm, writeChart(t, forever), chartInput())
	if !errors.Is(err, ErrTimedOut) || !strings.Contains(err.Error(), "longer than 2s") {
		t.Fatalf("err %v, want ErrTimedOut", err)
	}
	t.Logf("timed out after %s", time.Since(began).Round(time.Millisecond))
	if c := children(t); len(c) != 0 {
		t.Fatalf("render processes still running after the timeout: %v", c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after the render, %d before", n, goroutines)
	}
	// Control: a chart that ends renders within the same limit.
	if _, err := Isolated(context.Background(), Limits{Timeout: 30 * time.Second}, TypeHelm, writeChart(t, configMaps(3)), chartInput()); err != nil {
		t.Fatal(err)
	}
}

// TestIsolatedMemoryBound: a chart that builds a value larger than the render's memory ends its own
// process (RLIMIT_DATA), reported as ErrOutOfMemory; the operator's process holds none of it.
func TestIsolatedMemoryBound(t *testing.T) {
	// A list of 60 million numbers: some 480 MB.
	hog := `{{- $l := until 60000000 }}`
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Isolated(context.Background(), Limits{MemoryBytes: 256 << 20, Timeout: time.Minute}, TypeHelm, writeChart(t, hog), chartInput())
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("err %v, want ErrOutOfMemory", err)
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 32<<20 {
		t.Errorf("the operator's heap grew by %d bytes", grew)
	}
	// Control: a 1 MB value fits (and renders nothing the parser takes for an object).
	if _, err := Isolated(context.Background(), Limits{MemoryBytes: 256 << 20}, TypeHelm, writeChart(t, configMaps(1)), chartInput()); err != nil {
		t.Fatal(err)
	}
}
