package catalyst

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/platform-operator/platform-operator/internal/catalyst"
)

// TestServesAdmissionPolicies: the policies are applied only where the API server serves both kinds;
// elsewhere the NamespaceReady message says that only the guard checks.
func TestServesAdmissionPolicies(t *testing.T) {
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		want      bool
	}{
		{name: "Kubernetes 1.30 and later", want: true, resources: []*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "validatingwebhookconfigurations"}, {Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}}}}},
		{name: "webhooks only (before 1.30: the policies are v1beta1)", resources: []*metav1.APIResourceList{
			{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "validatingwebhookconfigurations"}}},
			{GroupVersion: "admissionregistration.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "validatingadmissionpolicies"}, {Name: "validatingadmissionpolicybindings"}}}}},
		{name: "a policy without its binding", resources: []*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1",
			APIResources: []metav1.APIResource{{Name: "validatingadmissionpolicies"}}}}},
		{name: "no admissionregistration at all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tt.resources}}
			got, err := servesAdmissionPolicies(dc)
			if err != nil || got != tt.want {
				t.Fatalf("servesAdmissionPolicies = %v, %v; want %v", got, err, tt.want)
			}
			msg := (&admissionPolicies{served: got}).enforcement()
			if tt.want != strings.Contains(msg, catalyst.PolicyHosts) || tt.want == strings.Contains(msg, "only the operator's own guard") {
				t.Errorf("enforcement() = %q", msg)
			}
		})
	}
	if msg := (*admissionPolicies)(nil).enforcement(); !strings.Contains(msg, "serves no") {
		t.Errorf("a reconciler without the runnable says %q", msg)
	}
}
