package bundle

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestBundleMonitoring: the bundle carries what the Deep Insights capability level stands on (docs/olm.md,
// "Monitoring"): the PrometheusRule with exactly config/prometheus's alerts, a ServiceMonitor that selects
// the bundle's metrics Service by its port, and the four Grafana dashboards labelled for Grafana's sidecar;
// the CSV's description says so.
func TestBundleMonitoring(t *testing.T) {
	b := loadBundle(t)
	byKind := map[string][]*unstructured.Unstructured{}
	for _, o := range b.Objects {
		byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
	}

	rules := byKind["PrometheusRule"]
	if len(rules) != 1 || rules[0].GetName() != "platform-operator-alerts" {
		t.Fatalf("bundle PrometheusRules %v, want one, platform-operator-alerts", names(rules))
	}
	var source map[string]any
	if err := yaml.Unmarshal(readFile(t, "config/prometheus/rules.yaml"), &source); err != nil {
		t.Fatal(err)
	}
	// Compare through JSON on both sides, as the bundle was written.
	want, got := normalize(t, source["spec"]), normalize(t, rules[0].Object["spec"])
	if !reflect.DeepEqual(got, want) {
		t.Error("the bundle's PrometheusRule differs from config/prometheus/rules.yaml: run make bundle")
	}

	monitors := byKind["ServiceMonitor"]
	if len(monitors) != 1 {
		t.Fatalf("bundle ServiceMonitors %v, want one", names(monitors))
	}
	selector, _, _ := unstructured.NestedStringMap(monitors[0].Object, "spec", "selector", "matchLabels")
	endpoints, _, _ := unstructured.NestedSlice(monitors[0].Object, "spec", "endpoints")
	var metricsService *unstructured.Unstructured
	for _, s := range byKind["Service"] {
		if matches(selector, s.GetLabels()) {
			if metricsService != nil {
				t.Errorf("the ServiceMonitor's selector %v matches Services %s and %s", selector, metricsService.GetName(), s.GetName())
			}
			metricsService = s
		}
	}
	if metricsService == nil || metricsService.GetName() != "platform-operator-controller-manager-metrics-service" {
		t.Fatalf("the ServiceMonitor's selector %v matches %v, want the metrics Service", selector, metricsService)
	}
	ports, _, _ := unstructured.NestedSlice(metricsService.Object, "spec", "ports")
	for _, e := range endpoints {
		port, _ := e.(map[string]any)["port"].(string)
		if !slices.ContainsFunc(ports, func(p any) bool { return p.(map[string]any)["name"] == port }) {
			t.Errorf("the ServiceMonitor scrapes port %q, which the metrics Service does not name", port)
		}
	}
	if len(endpoints) == 0 {
		t.Error("the ServiceMonitor has no endpoints")
	}

	var dashboards []string
	for _, cm := range byKind["ConfigMap"] {
		if cm.GetLabels()["grafana_dashboard"] == "1" {
			dashboards = append(dashboards, cm.GetName())
		}
	}
	slices.Sort(dashboards)
	wantDashboards := []string{"platform-operator-dashboard-catalyst", "platform-operator-dashboard-databases",
		"platform-operator-dashboard-fleet", "platform-operator-dashboard-overview"}
	if !slices.Equal(dashboards, wantDashboards) {
		t.Errorf("dashboard ConfigMaps %q, want %q", dashboards, wantDashboards)
	}

	desc := b.CSV.Spec.Description
	for _, s := range []string{"## Monitoring", "PrometheusRule", "runbook", "Grafana"} {
		if !strings.Contains(desc, s) {
			t.Errorf("the CSV's description does not mention %q", s)
		}
	}
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func normalize(t *testing.T, v any) any {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
