package platform

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestDiscoverWith(t *testing.T) {
	group := func(gv string, resources ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: gv}
		for _, r := range resources {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: r})
		}
		return l
	}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		want      Capabilities
	}{
		{"plain kubernetes", []*metav1.APIResourceList{group("v1", "pods")}, Capabilities{}},
		{"cert-manager only", []*metav1.APIResourceList{group("cert-manager.io/v1", "certificates", "issuers")}, Capabilities{CertManager: true}},
		{"cert-manager without certificates", []*metav1.APIResourceList{group("cert-manager.io/v1", "issuers")}, Capabilities{}},
		{"openshift", []*metav1.APIResourceList{
			group("route.openshift.io/v1", "routes", "routes/status"),
			group("security.openshift.io/v1", "securitycontextconstraints"),
			group("cert-manager.io/v1", "certificates"),
		}, Capabilities{CertManager: true, Routes: true, OpenShift: true}},
		{"routes without SCCs (e.g. a test cluster)", []*metav1.APIResourceList{group("route.openshift.io/v1", "routes")}, Capabilities{Routes: true}},
		{"prometheus operator", []*metav1.APIResourceList{group("monitoring.coreos.com/v1", "podmonitors", "servicemonitors")}, Capabilities{PodMonitors: true}},
		{"prometheus operator without podmonitors", []*metav1.APIResourceList{group("monitoring.coreos.com/v1", "servicemonitors")}, Capabilities{}},
		{"istio", []*metav1.APIResourceList{group("networking.istio.io/v1", "gateways", "virtualservices", "destinationrules")}, Capabilities{Istio: true}},
		{"istio without virtual services", []*metav1.APIResourceList{group("networking.istio.io/v1", "gateways")}, Capabilities{}},
		{"istio only in v1beta1 (before 1.22)", []*metav1.APIResourceList{group("networking.istio.io/v1beta1", "gateways", "virtualservices")}, Capabilities{}},
		{"the operator's backup API", []*metav1.APIResourceList{group("backup.josie.cloud/v1alpha1", "backups", "backups/status", "backupstores")}, Capabilities{Backups: true}},
		{"backup stores without backups", []*metav1.APIResourceList{group("backup.josie.cloud/v1alpha1", "backupstores")}, Capabilities{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tt.resources}}
			got, err := DiscoverWith(dc)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
