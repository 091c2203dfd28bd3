package metrics

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// docMetric matches a metrics table row of docs/metrics.md: | `platform_operator_...` | type | ...
var docMetric = regexp.MustCompile("^\\|\\s*`(platform_operator_[a-z0-9_]+)`\\s*\\|\\s*([a-z]+)\\s*\\|")

// documentedMetrics are the metrics docs/metrics.md lists outside the sections named in skip (by their
// heading's first word), with their type.
func documentedMetrics(t *testing.T, skip ...string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	section := ""
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = strings.Fields(h + " ")[0]
			continue
		}
		if m := docMetric.FindStringSubmatch(line); m != nil && !slices.Contains(skip, section) {
			out[m[1]] = m[2]
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Every metric docs/metrics.md lists is registered by Register, with the type it says, and every
// platform_operator_ metric Register registers is listed. The Fleet section's metrics are the iot
// controller's (controllers/iot), registered there and checked by its tests; the Backups section's are
// checked by TestBackupMetricsDocumented (their per-source series exist only once Backups do).
func TestDocumentedMetricsAreRegistered(t *testing.T) {
	documented := documentedMetrics(t, "Fleet", "Backups")
	if len(documented) < 10 {
		t.Fatalf("only %d metrics found in docs/metrics.md; has its table format changed?", len(documented))
	}
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, reader(), nil, AllKinds...); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]string{}
	for _, f := range families {
		registered[f.GetName()] = strings.ToLower(f.GetType().String())
	}
	for name, typ := range documented {
		got, ok := registered[name]
		switch {
		case !ok:
			t.Errorf("docs/metrics.md lists %s, which the code does not register (or does not show before anything happened)", name)
		case got != typ:
			t.Errorf("docs/metrics.md says %s is a %s; it is a %s", name, typ, got)
		}
	}
	for name := range registered {
		if _, ok := documented[name]; !ok && strings.HasPrefix(name, Namespace+"_") {
			t.Errorf("%s is registered and not in docs/metrics.md", name)
		}
	}
}
