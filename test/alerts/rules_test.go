package alerts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// unitTestFile is the part of a promtool unit test file these checks read.
type unitTestFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name           string `json:"name"`
		AlertRuleTests []struct {
			EvalTime  string           `json:"eval_time"`
			AlertName string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// workDir writes the rules file extracted from the PrometheusRule, and copies of the unit test files,
// into a temporary directory: the test files name the rules file rules.yaml, next to them.
func workDir(t *testing.T) (dir string, testFiles []string) {
	t.Helper()
	root := testutil.RepoRoot(t)
	dir = t.TempDir()
	rules, err := RulesFile(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, u := range unitTests(t, root) {
		if !slices.Equal(u.RuleFiles, []string{"rules.yaml"}) {
			t.Fatalf("%s: rule_files %q, want [rules.yaml] (the PrometheusRule's spec, which the test writes)", u.path, u.RuleFiles)
		}
		testFiles = append(testFiles, filepath.Base(u.path))
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(u.path)), u.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, testFiles
}

// unitTest is one promtool unit test file of test/alerts/testdata, as read and as parsed.
type unitTest struct {
	unitTestFile
	path string
	data []byte
}

// unitTests reads and parses every promtool unit test file of test/alerts/testdata; there must be some.
func unitTests(t *testing.T, root string) []unitTest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "test", "alerts", "testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool unit tests in test/alerts/testdata (%v)", err)
	}
	var out []unitTest
	for _, f := range files {
		u := unitTest{path: f}
		if u.data, err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(u.data, &u.unitTestFile); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, u)
	}
	return out
}

// promtool runs promtool in dir and returns its combined output and whether it succeeded.
func promtool(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	bin, _, err := Tools(testutil.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	return out.String(), err == nil
}

// TestPromtoolCheckRules: the rules promtool reads from the PrometheusRule are valid (expressions parse,
// templates compile, no duplicate names), and a broken expression is caught (the control).
func TestPromtoolCheckRules(t *testing.T) {
	dir, _ := workDir(t)
	out, ok := promtool(t, dir, "check", "rules", "rules.yaml")
	if !ok {
		t.Fatalf("promtool check rules:\n%s", out)
	}
	rules, err := LoadRules(testutil.RepoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(rules.Alerts())); !strings.Contains(out, want) {
		t.Errorf("promtool check rules did not say %q:\n%s", want, out)
	}

	data, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), "expr: absent(", "expr: absent((", 1)
	if broken == string(data) {
		t.Fatal("the control found no absent( expression to break")
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, ok := promtool(t, dir, "check", "rules", "broken.yaml"); ok {
		t.Errorf("promtool check rules accepted an expression with an unclosed parenthesis:\n%s", out)
	}
}

// TestPromtoolUnitTests runs every unit test of testdata against the rules, and a test expecting the
// wrong thing to prove promtool's failures reach this test.
func TestPromtoolUnitTests(t *testing.T) {
	dir, files := workDir(t)
	out, ok := promtool(t, dir, append([]string{"test", "rules"}, files...)...)
	if !ok {
		t.Fatalf("promtool test rules:\n%s", out)
	}
	t.Log(out)

	wrong := `rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:
  - series: up{job="platform-operator-controller-manager-metrics-service"}
    values: 0x15
  alert_rule_test:
  - eval_time: 10m
    alertname: PlatformOperatorDown
    exp_alerts: []
`
	if err := os.WriteFile(filepath.Join(dir, "wrong.yaml"), []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, ok := promtool(t, dir, "test", "rules", "wrong.yaml"); ok || !strings.Contains(out, "PlatformOperatorDown") {
		t.Errorf("promtool test rules passed a test expecting PlatformOperatorDown quiet while the operator is down:\n%s", out)
	}
}

// TestEveryAlertIsTestedFiringAndQuiet: each alert has at least one unit test that expects it to fire
// and one that expects it not to, and no test names an alert that does not exist.
func TestEveryAlertIsTestedFiringAndQuiet(t *testing.T) {
	root := testutil.RepoRoot(t)
	rules, err := LoadRules(root)
	if err != nil {
		t.Fatal(err)
	}
	firing, quiet := map[string]int{}, map[string]int{}
	for _, u := range unitTests(t, root) {
		for _, tg := range u.Tests {
			for _, at := range tg.AlertRuleTests {
				if len(at.ExpAlerts) > 0 {
					firing[at.AlertName]++
				} else {
					quiet[at.AlertName]++
				}
			}
		}
	}
	alerts := map[string]bool{}
	for _, a := range rules.Alerts() {
		alerts[a.Alert] = true
		if firing[a.Alert] == 0 {
			t.Errorf("no unit test expects %s to fire", a.Alert)
		}
		if quiet[a.Alert] == 0 {
			t.Errorf("no unit test expects %s not to fire", a.Alert)
		}
	}
	for name := range firing {
		if !alerts[name] {
			t.Errorf("a unit test expects alert %s, which the PrometheusRule does not have", name)
		}
	}
	for name := range quiet {
		if !alerts[name] {
			t.Errorf("a unit test names alert %s, which the PrometheusRule does not have", name)
		}
	}
}

// runbookSections are the headings every runbook has, in this order.
var runbookSections = []string{"## Meaning", "## Diagnosis", "## Mitigation"}

// TestAlertsHaveSeverityAnnotationsAndRunbooks: every alert has a severity Alertmanager can route on, a
// summary and a description, a `for` (no alert on a single evaluation), and a runbook_url pointing at its
// runbook in docs/runbooks, which exists, is titled with the alert's name and says what it means, how to
// diagnose it and what to do. No runbook is left without its alert.
func TestAlertsHaveSeverityAnnotationsAndRunbooks(t *testing.T) {
	root := testutil.RepoRoot(t)
	rules, err := LoadRules(root)
	if err != nil {
		t.Fatal(err)
	}
	alerts := rules.Alerts()
	if len(alerts) == 0 {
		t.Fatal("the PrometheusRule has no alerts")
	}
	seen := map[string]bool{}
	for _, a := range alerts {
		if seen[a.Alert] {
			t.Errorf("alert %s is defined twice", a.Alert)
		}
		seen[a.Alert] = true
		if !regexp.MustCompile(`^PlatformOperator[A-Z][A-Za-z]+$`).MatchString(a.Alert) {
			t.Errorf("alert %s: names start with PlatformOperator and are CamelCase", a.Alert)
		}
		if s := a.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("alert %s: severity %q, want warning or critical", a.Alert, s)
		}
		if a.For == "" {
			t.Errorf("alert %s has no for", a.Alert)
		}
		for _, k := range []string{"summary", "description"} {
			if strings.TrimSpace(a.Annotations[k]) == "" {
				t.Errorf("alert %s has no %s", a.Alert, k)
			}
		}
		if want := RunbookBase + a.Alert + ".md"; a.Annotations["runbook_url"] != want {
			t.Errorf("alert %s: runbook_url %q, want %q", a.Alert, a.Annotations["runbook_url"], want)
		}
		data, err := os.ReadFile(filepath.Join(root, "docs", "runbooks", a.Alert+".md"))
		if err != nil {
			t.Errorf("alert %s has no runbook: %v", a.Alert, err)
			continue
		}
		text := string(data)
		if !strings.HasPrefix(text, "# "+a.Alert+"\n") {
			t.Errorf("docs/runbooks/%s.md does not start with the heading # %s", a.Alert, a.Alert)
		}
		if !strings.Contains(text, "**Severity:** "+a.Labels["severity"]+".") {
			t.Errorf("docs/runbooks/%s.md does not state the severity %s", a.Alert, a.Labels["severity"])
		}
		last := -1
		for _, s := range runbookSections {
			i := strings.Index(text, "\n"+s+"\n")
			if i < 0 || i < last {
				t.Errorf("docs/runbooks/%s.md: section %q missing or out of order (want %q)", a.Alert, s, runbookSections)
			}
			last = i
		}
	}
	runbooks, _ := filepath.Glob(filepath.Join(root, "docs", "runbooks", "*.md"))
	for _, r := range runbooks {
		if name := strings.TrimSuffix(filepath.Base(r), ".md"); !seen[name] {
			t.Errorf("docs/runbooks/%s.md has no alert of that name", name)
		}
	}
}
