package alerts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// RunbookBase is where every alert's runbook_url points: the alert's name and ".md" follow.
const RunbookBase = "https://github.com/platform-operator/platform-operator/blob/main/docs/runbooks/"

// PrometheusRule is the part of config/prometheus/rules.yaml the checks read. The file promtool reads is
// written from the untyped spec (RulesFile), so no field is lost on the way.
type PrometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Groups []RuleGroup `json:"groups"`
	} `json:"spec"`
}

// RuleGroup is one group of rules.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is an alerting (or recording) rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RulesPath is the PrometheusRule's file in the repository.
func RulesPath(root string) string {
	return filepath.Join(root, "config", "prometheus", "rules.yaml")
}

// LoadRules reads the PrometheusRule.
func LoadRules(root string) (*PrometheusRule, error) {
	data, err := os.ReadFile(RulesPath(root))
	if err != nil {
		return nil, err
	}
	r := &PrometheusRule{}
	if err := yaml.UnmarshalStrict(data, r, yaml.DisallowUnknownFields); err != nil {
		return nil, fmt.Errorf("%s: %w", RulesPath(root), err)
	}
	if r.APIVersion != "monitoring.coreos.com/v1" || r.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("%s is a %s %s, not a monitoring.coreos.com/v1 PrometheusRule", RulesPath(root), r.APIVersion, r.Kind)
	}
	return r, nil
}

// Alerts returns every alerting rule, in file order.
func (r *PrometheusRule) Alerts() []Rule {
	var out []Rule
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			if rule.Alert != "" {
				out = append(out, rule)
			}
		}
	}
	return out
}

// RulesFile is the PrometheusRule's spec as a Prometheus rules file: the one copy of the rules is the
// Kubernetes object, and promtool reads this extract of it.
func RulesFile(root string) ([]byte, error) {
	data, err := os.ReadFile(RulesPath(root))
	if err != nil {
		return nil, err
	}
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	if len(obj.Spec) == 0 {
		return nil, fmt.Errorf("%s has no spec", RulesPath(root))
	}
	return yaml.JSONToYAML(obj.Spec)
}

// Dashboard is one Grafana dashboard as config/grafana ships it.
type Dashboard struct {
	// ConfigMap is the name of the ConfigMap that carries it, and Labels that ConfigMap's labels.
	ConfigMap string
	Labels    map[string]string
	// Key is the ConfigMap's data key, the dashboard's file name.
	Key string
	// JSON is the dashboard model.
	JSON map[string]any
	// Queries are every query of the dashboard: each panel target's expr and each query variable's query.
	Queries []Query
}

// Query is one PromQL query of a dashboard.
type Query struct {
	// Where says where it is, for messages: the panel's or the variable's title.
	Where string
	// Expr is the query as Grafana stores it, with its variables.
	Expr string
}

// Dashboards builds config/grafana with kustomize, as the bundle and `kustomize build` ship it, and reads
// every dashboard out of its ConfigMaps.
func Dashboards(root string) ([]Dashboard, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", "grafana"))
	if err != nil {
		return nil, err
	}
	var out []Dashboard
	for _, res := range m.Resources() {
		if res.GetKind() != "ConfigMap" {
			return nil, fmt.Errorf("config/grafana makes a %s %s: only dashboard ConfigMaps belong there", res.GetKind(), res.GetName())
		}
		data := res.GetDataMap()
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			d := Dashboard{ConfigMap: res.GetName(), Labels: res.GetLabels(), Key: k}
			if err := json.Unmarshal([]byte(data[k]), &d.JSON); err != nil {
				return nil, fmt.Errorf("ConfigMap %s, %s: %w", d.ConfigMap, k, err)
			}
			d.Queries = queries(d.JSON)
			out = append(out, d)
		}
	}
	return out, nil
}

// labelValues is the metric of a Grafana variable query label_values(metric, label).
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

func queries(d map[string]any) []Query {
	var out []Query
	var walk func(panels []any)
	walk = func(panels []any) {
		for _, p := range panels {
			panel, _ := p.(map[string]any)
			title, _ := panel["title"].(string)
			targets, _ := panel["targets"].([]any)
			for _, t := range targets {
				target, _ := t.(map[string]any)
				if expr, ok := target["expr"].(string); ok {
					out = append(out, Query{Where: "panel " + title, Expr: expr})
				}
			}
			nested, _ := panel["panels"].([]any) // a collapsed row holds its panels
			walk(nested)
		}
	}
	panels, _ := d["panels"].([]any)
	walk(panels)
	templating, _ := d["templating"].(map[string]any)
	vars, _ := templating["list"].([]any)
	for _, v := range vars {
		variable, _ := v.(map[string]any)
		if variable["type"] != "query" {
			continue
		}
		name, _ := variable["name"].(string)
		q, _ := variable["query"].(map[string]any)
		expr, _ := q["query"].(string)
		if m := labelValues.FindStringSubmatch(expr); m != nil {
			expr = m[1]
		}
		out = append(out, Query{Where: "variable " + name, Expr: expr})
	}
	return out
}

// grafanaVariable matches $name and ${name} (and ${name:format}).
var grafanaVariable = regexp.MustCompile(`\$\{([a-zA-Z_][a-zA-Z0-9_]*)(?::[a-z]+)?\}|\$([a-zA-Z_][a-zA-Z0-9_]*)`)

// PromQL turns a dashboard query into plain PromQL: Grafana's interval variables become a duration and
// every other variable (they are used only inside label matchers' strings) a plain value.
func PromQL(expr string) string {
	return grafanaVariable.ReplaceAllStringFunc(expr, func(v string) string {
		m := grafanaVariable.FindStringSubmatch(v)
		name := m[1] + m[2]
		switch name {
		case "__rate_interval", "__interval", "__range":
			return "5m"
		case "__interval_ms", "__range_ms", "__range_s":
			return "300"
		}
		return "value"
	})
}

// Tools returns the paths of promtool and promql-names as `make promtool` builds them, for the version
// hack/tools/promtool pins, and fails naming the make target when one is missing.
func Tools(root string) (promtool, promqlNames string, err error) {
	gomod, err := os.ReadFile(filepath.Join(root, "hack", "tools", "promtool", "go.mod"))
	if err != nil {
		return "", "", err
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/prometheus/prometheus\s+(v\S+)\s*$`).FindSubmatch(gomod)
	if m == nil {
		return "", "", errors.New("hack/tools/promtool/go.mod does not require github.com/prometheus/prometheus")
	}
	dir := filepath.Join(root, "bin", "promtool-"+string(m[1]))
	promtool, promqlNames = filepath.Join(dir, "promtool"), filepath.Join(dir, "promql-names")
	for _, p := range []string{promtool, promqlNames} {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("%s is missing: run `make promtool` (it is a prerequisite of make test): %w", p, err)
		}
	}
	return promtool, promqlNames, nil
}

// MetricNames parses each expression with Prometheus' PromQL parser (promql-names) and returns the metric
// names each selects. An expression that does not parse, or selects series without naming a metric, is
// an error naming it.
func MetricNames(promqlNames string, exprs []string) ([][]string, error) {
	in, err := json.Marshal(exprs)
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(promqlNames)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", promqlNames, err, stderr.String())
	}
	var results []struct {
		Names []string `json:"names"`
		Error string   `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		return nil, err
	}
	if len(results) != len(exprs) {
		return nil, fmt.Errorf("%s answered %d results for %d expressions", promqlNames, len(results), len(exprs))
	}
	out := make([][]string, len(exprs))
	var errs []error
	for i, r := range results {
		if r.Error != "" {
			errs = append(errs, fmt.Errorf("%q: %s", exprs[i], r.Error))
		}
		out[i] = r.Names
	}
	return out, errors.Join(errs...)
}

// NamedMetric is a metric name and where it is used.
type NamedMetric struct {
	Name  string
	Where []string
}

// UsedMetrics parses every alert expression and every dashboard query and returns the metric names they
// use, sorted, with where each is used.
func UsedMetrics(root, promqlNames string) ([]NamedMetric, error) {
	rules, err := LoadRules(root)
	if err != nil {
		return nil, err
	}
	dashboards, err := Dashboards(root)
	if err != nil {
		return nil, err
	}
	var exprs, where []string
	for _, a := range rules.Alerts() {
		exprs, where = append(exprs, a.Expr), append(where, "alert "+a.Alert)
	}
	for _, d := range dashboards {
		for _, q := range d.Queries {
			exprs, where = append(exprs, PromQL(q.Expr)), append(where, "dashboard "+d.Key+", "+q.Where)
		}
	}
	names, err := MetricNames(promqlNames, exprs)
	if err != nil {
		return nil, err
	}
	used := map[string][]string{}
	for i, ns := range names {
		for _, n := range ns {
			used[n] = append(used[n], where[i])
		}
	}
	out := make([]NamedMetric, 0, len(used))
	for n, w := range used {
		out = append(out, NamedMetric{Name: n, Where: slices.Compact(w)})
	}
	slices.SortFunc(out, func(a, b NamedMetric) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Scraped is what Prometheus adds itself rather than reads from the operator: `up` is the scrape's own
// result.
var Scraped = []string{"up"}

// builtinPrefixes are the metrics controller-runtime's registry serves besides the operator's own:
// controller-runtime's, client-go's work queues and leader election, and the Go and process collectors.
var builtinPrefixes = []string{"controller_runtime_", "workqueue_", "leader_election_master_status", "go_", "process_"}

// Builtin says whether name is one of controller-runtime's, the Go runtime's or the process's metrics.
func Builtin(name string) bool {
	for _, p := range builtinPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// SeriesFamilies are the metric families a series name may belong to: itself, and for a histogram's
// (or summary's) _bucket, _sum and _count series the histogram.
func SeriesFamilies(name string) []string {
	out := []string{name}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			out = append(out, base)
		}
	}
	return out
}

// tableHeader is the header of a Markdown table whose first column is "name"; metricsTableRow is a row
// whose first cell is a metric name, in backticks or not, perhaps followed by its labels in braces.
var (
	tableHeader     = regexp.MustCompile(`^\|\s*name\s*\|`)
	metricsTableRow = regexp.MustCompile("^\\|\\s*`?([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{[^}`]*\\})?`?\\s*\\|")
)

// DocumentedMetrics are the metric names in the first column of docs/metrics.md's tables whose first
// column is headed "name" (other tables list labels).
func DocumentedMetrics(root string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		return nil, err
	}
	return documentedMetrics(string(data)), nil
}

func documentedMetrics(markdown string) map[string]bool {
	out := map[string]bool{}
	inTable := false
	for line := range strings.SplitSeq(markdown, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case !strings.HasPrefix(line, "|"):
			inTable = false
		case tableHeader.MatchString(line):
			inTable = true
		case inTable:
			if m := metricsTableRow.FindStringSubmatch(line); m != nil {
				out[m[1]] = true
			}
		}
	}
	return out
}
