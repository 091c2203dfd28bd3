package ergo

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// minimalNetwork is the smallest network the CRD admits: one plaintext listener, nothing optional.
func minimalNetwork() *ircv1.ErgoNetwork {
	return &ircv1.ErgoNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: "irc", UID: "0b5e6a3c-tiny"},
		Spec: ircv1.ErgoNetworkSpec{
			Hostname:  "tiny.irc.now",
			Listeners: []ircv1.Listener{{Address: ":6667"}},
		},
	}
}

// referenceNetwork is the sample from the issue: TLS, two listeners, a route and an oper.
func referenceNetwork() *ircv1.ErgoNetwork {
	return &ircv1.ErgoNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "my-network", Namespace: "irc-josie-cloud", UID: "6f1c2d7e-my-network"},
		Spec: ircv1.ErgoNetworkSpec{
			Hostname:        "my-network.irc.now",
			NetworkName:     "MyNetwork",
			OperCredentials: &ircv1.OperCredentials{SecretName: "my-network-oper"},
			Listeners: []ircv1.Listener{
				{Address: ":6697", TLS: true},
				{Address: ":6667"},
			},
			TLS: &ircv1.TLSSpec{
				IssuerRef: ircv1.IssuerRef{Name: "letsencrypt-prod", Kind: "ClusterIssuer"},
				DNSNames:  []string{"my-network.irc.now"},
			},
			Route: &ircv1.RouteSpec{Host: "my-network.irc.now"},
			Storage: ircv1.StorageSpec{
				Size:             ptr.To(resource.MustParse("1Gi")),
				StorageClassName: "customer-workload-storage",
			},
			Resources: &ircv1.ResourceRequirements{
				Requests: map[corev1.ResourceName]resource.Quantity{
					corev1.ResourceMemory: resource.MustParse("64Mi"),
					corev1.ResourceCPU:    resource.MustParse("50m"),
				},
				Limits: map[corev1.ResourceName]resource.Quantity{
					corev1.ResourceMemory: resource.MustParse("256Mi"),
					corev1.ResourceCPU:    resource.MustParse("200m"),
				},
			},
		},
	}
}

// checkGolden compares got with testdata/name, or rewrites the file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatalf("write %s: %v", file, err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s (run go test -update to create it): %v", file, err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run go test -update if the change is intended)\n--- got\n%s", file, got)
	}
}
