package olm

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// expectBundleMonitoring checks what OLM made of the bundle's monitoring objects once the current CSV
// is installed: the PrometheusRule with config/prometheus's rule groups, the ServiceMonitor, and the four
// dashboard ConfigMaps, all in the install namespace.
func expectBundleMonitoring(ctx context.Context) {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "rules.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var source struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	Expect(yaml.Unmarshal(data, &source)).To(Succeed())

	rule := &unstructured.Unstructured{}
	rule.SetAPIVersion("monitoring.coreos.com/v1")
	rule.SetKind("PrometheusRule")
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: "platform-operator-alerts"}, rule)).To(Succeed(),
		"OLM did not create the bundle's PrometheusRule")
	groups, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	Expect(err).NotTo(HaveOccurred())
	Expect(groups).To(HaveLen(len(source.Spec.Groups)))

	monitor := &unstructured.Unstructured{}
	monitor.SetAPIVersion("monitoring.coreos.com/v1")
	monitor.SetKind("ServiceMonitor")
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: "platform-operator-controller-manager-metrics-monitor"}, monitor)).To(Succeed(),
		"OLM did not create the bundle's ServiceMonitor")

	dashboards := &unstructured.UnstructuredList{}
	dashboards.SetAPIVersion("v1")
	dashboards.SetKind("ConfigMapList")
	Expect(k8s.List(ctx, dashboards, client.InNamespace(installNamespace), client.MatchingLabels{"grafana_dashboard": "1"})).To(Succeed())
	Expect(dashboards.Items).To(HaveLen(4), "OLM did not create the four dashboard ConfigMaps")
}
