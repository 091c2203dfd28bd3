package alerts

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// undocumented returns the names that are neither in docs/metrics.md's tables (a histogram's series by
// the histogram's name), nor controller-runtime's, Go's or the process's, nor Prometheus' own `up`.
func undocumented(documented map[string]bool, used []NamedMetric) []NamedMetric {
	var out []NamedMetric
	for _, m := range used {
		if slices.Contains(Scraped, m.Name) || Builtin(m.Name) {
			continue
		}
		if !slices.ContainsFunc(SeriesFamilies(m.Name), func(f string) bool { return documented[f] }) {
			out = append(out, m)
		}
	}
	return out
}

// TestMetricNamesAreDocumented: every metric an alert or a dashboard panel (or variable) uses, as
// Prometheus' parser reads the expression, is in docs/metrics.md or is one the operator gets from
// controller-runtime. A misspelt name would otherwise make an alert that never fires and a panel that
// stays empty, without any error.
func TestMetricNamesAreDocumented(t *testing.T) {
	root := testutil.RepoRoot(t)
	_, promqlNames, err := Tools(root)
	if err != nil {
		t.Fatal(err)
	}
	used, err := UsedMetrics(root, promqlNames)
	if err != nil {
		t.Fatal(err)
	}
	documented, err := DocumentedMetrics(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(documented) == 0 {
		t.Fatal("docs/metrics.md has no table of metric names")
	}
	for _, m := range undocumented(documented, used) {
		t.Errorf("%s is not in docs/metrics.md (used by %s)", m.Name, strings.Join(m.Where, "; "))
	}
	var names []string
	for _, m := range used {
		names = append(names, m.Name)
	}
	t.Logf("%d metric names used: %s", len(names), strings.Join(names, " "))

	// Control: the same check catches a name that is not documented, and takes a documented histogram's
	// series.
	bogus := []NamedMetric{
		{Name: "platform_operator_reconcile_error_total", Where: []string{"control"}},
		{Name: "platform_operator_ready_duration_seconds_bucket", Where: []string{"control"}},
	}
	if got := undocumented(documented, bogus); len(got) != 1 || got[0].Name != "platform_operator_reconcile_error_total" {
		t.Errorf("the check of %v reports %v, want only the misspelt name", bogus, got)
	}
}

// TestMetricNamesControl: promql-names reports an expression that does not parse and a selector without
// a metric name, so a broken panel cannot pass unseen.
func TestMetricNamesControl(t *testing.T) {
	_, promqlNames, err := Tools(testutil.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	names, err := MetricNames(promqlNames, []string{
		`sum by (le) (rate(a_bucket{x="y"}[5m])) / on() group_left b or vector(0)`,
		`{__name__="c_total", job="j"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"a_bucket", "b"}, {"c_total"}}; !slices.EqualFunc(names, want, slices.Equal) {
		t.Errorf("names %q, want %q", names, want)
	}
	for _, bad := range []string{`sum(rate(a[5m])`, `{job="j"}`, `rate(a[$__rate_interval])`} {
		if _, err := MetricNames(promqlNames, []string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestDocumentedMetricsTable(t *testing.T) {
	md := "# M\n\n| name | type |\n|---|---|\n| `a_total` | counter |\n| b_seconds{kind} | histogram |\n\n" +
		"| label | bounded by |\n|---|---|\n| `kind` | the kinds |\n"
	got := documentedMetrics(md)
	if want := []string{"a_total", "b_seconds"}; !slices.Equal(slices.Sorted(maps.Keys(got)), want) {
		t.Errorf("documented %v, want %v (a table of labels lists no metric)", slices.Sorted(maps.Keys(got)), want)
	}
}

func TestPromQL(t *testing.T) {
	tests := []struct{ in, want string }{
		{`rate(a[$__rate_interval])`, `rate(a[5m])`},
		{`rate(a[${__interval}])`, `rate(a[5m])`},
		{`a{namespace=~"$namespace"}`, `a{namespace=~"value"}`},
		{`a{namespace=~"${namespace:regex}"}`, `a{namespace=~"value"}`},
		{`sum(a)`, `sum(a)`},
	}
	for _, tt := range tests {
		if got := PromQL(tt.in); got != tt.want {
			t.Errorf("PromQL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// areas are the dashboards the operator ships, by data key.
var areas = []string{"catalyst.json", "databases.json", "fleet.json", "overview.json"}

// TestDashboards: config/grafana ships one ConfigMap per area, each labelled for Grafana's sidecar,
// with a dashboard whose uid is unique and stable, that asks for its Prometheus data source in a
// variable, whose every panel uses that variable, and that has queries.
func TestDashboards(t *testing.T) {
	dashboards, err := Dashboards(testutil.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	uids := map[string]string{}
	for _, d := range dashboards {
		keys = append(keys, d.Key)
		if d.Labels["grafana_dashboard"] != "1" {
			t.Errorf("ConfigMap %s: label grafana_dashboard is %q, want \"1\" (Grafana's sidecar looks for it)", d.ConfigMap, d.Labels["grafana_dashboard"])
		}
		uid, _ := d.JSON["uid"].(string)
		if !strings.HasPrefix(uid, "platform-operator-") || len(uid) > 40 {
			t.Errorf("%s: uid %q, want platform-operator-<area> (Grafana allows 40 characters)", d.Key, uid)
		}
		if other, dup := uids[uid]; dup {
			t.Errorf("%s and %s share uid %q", d.Key, other, uid)
		}
		uids[uid] = d.Key
		if title, _ := d.JSON["title"].(string); title == "" {
			t.Errorf("%s has no title", d.Key)
		}
		templating, _ := d.JSON["templating"].(map[string]any)
		vars, _ := templating["list"].([]any)
		if !slices.ContainsFunc(vars, func(v any) bool {
			m, _ := v.(map[string]any)
			return m["name"] == "datasource" && m["type"] == "datasource" && m["query"] == "prometheus"
		}) {
			t.Errorf("%s has no datasource variable of type prometheus", d.Key)
		}
		panels, _ := d.JSON["panels"].([]any)
		if len(panels) == 0 || len(d.Queries) == 0 {
			t.Errorf("%s has no panels or no queries", d.Key)
		}
		for _, p := range panels {
			panel, _ := p.(map[string]any)
			ds, _ := panel["datasource"].(map[string]any)
			if ds["uid"] != "${datasource}" {
				t.Errorf("%s, panel %v: datasource %v, want uid ${datasource}", d.Key, panel["title"], panel["datasource"])
			}
		}
		for _, q := range d.Queries {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("%s, %s: empty query", d.Key, q.Where)
			}
		}
	}
	slices.Sort(keys)
	if !slices.Equal(keys, areas) {
		t.Errorf("dashboards %q, want %q", keys, areas)
	}
}
