// Package ergotest holds the ErgoNetwork fixtures every test layer shares (builders' golden tests, the
// envtest suites, e2e, the demo and the bench): the reference network, a network asking for every child,
// the user's oper Secret; the stand-ins for the controllers a test cluster does not run (cert-manager, the
// Deployment controller, the volume binder) are internal/testutil/standin's, named here too for the callers
// that know them by this package. It imports no other package of this module but the API types and standin
// (a leaf), so internal/irc/ergo's own tests can use it.
package ergotest

import (
	"fmt"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/testutil/standin"
)

// ReferenceStorageClass is the storage class the reference network asks for.
const ReferenceStorageClass = "customer-workload-storage"

// MinimalNetwork is the smallest network the CRD admits: one plaintext listener, nothing optional.
func MinimalNetwork(ns, name string) *ircv1.ErgoNetwork {
	return &ircv1.ErgoNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ircv1.ErgoNetworkSpec{
			Hostname:  name + ".irc.now",
			Listeners: []ircv1.Listener{{Address: ":6667"}},
		},
	}
}

// PlainNetwork has one plaintext listener and an oper from secret: no certificate, so it becomes Ready
// as soon as its Deployment is Available.
func PlainNetwork(ns, name, secret string) *ircv1.ErgoNetwork {
	n := MinimalNetwork(ns, name)
	n.Spec.Hostname = name + ".irc.test"
	n.Spec.OperCredentials = &ircv1.OperCredentials{SecretName: secret}
	return n
}

// FullNetwork asks for every child: an oper from Secret {name}-oper, a TLS and a plaintext listener, a
// certificate from ClusterIssuer "selfsigned", a Route, 1Gi of storage and resources.
func FullNetwork(ns, name, hostname string) *ircv1.ErgoNetwork {
	return &ircv1.ErgoNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: ircv1.ErgoNetworkSpec{
			Hostname:        hostname,
			OperCredentials: &ircv1.OperCredentials{SecretName: name + "-oper"},
			Listeners:       []ircv1.Listener{{Address: ":6697", TLS: true}, {Address: ":6667"}},
			TLS:             &ircv1.TLSSpec{IssuerRef: ircv1.IssuerRef{Name: "selfsigned", Kind: "ClusterIssuer"}},
			Route:           &ircv1.RouteSpec{Host: hostname},
			Storage:         ircv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
			Resources: &ircv1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("64Mi"),
					corev1.ResourceCPU:    resource.MustParse("50m"),
				},
				Limits: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("256Mi"),
					corev1.ResourceCPU:    resource.MustParse("200m"),
				},
			},
		},
	}
}

// ReferenceNetwork is the reference document's sample, my-network in ns: FullNetwork with the network
// name MyNetwork, the letsencrypt-prod ClusterIssuer, an explicit DNS name and ReferenceStorageClass.
// internal/irc/ergo's golden files (testdata/reference.golden.yaml) are rendered from it.
func ReferenceNetwork(ns string) *ircv1.ErgoNetwork {
	n := FullNetwork(ns, "my-network", "my-network.irc.now")
	n.Spec.NetworkName = "MyNetwork"
	n.Spec.TLS.IssuerRef = ircv1.IssuerRef{Name: "letsencrypt-prod", Kind: "ClusterIssuer"}
	n.Spec.TLS.DNSNames = []string{"my-network.irc.now"}
	n.Spec.Storage.StorageClassName = ReferenceStorageClass
	return n
}

// OperHash is a bcrypt hash of password, as `ergo genpasswd` makes (at bcrypt's lowest cost, which ergo
// accepts, so that tests hashing many passwords stay fast under the race detector).
func OperHash(password string) []byte {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		// Only a password over 72 bytes fails; fixtures never use one.
		panic(fmt.Sprintf("ergotest: bcrypt: %v", err))
	}
	return hash
}

// OperSecret is a user's oper Secret holding the hash of password under the default key.
func OperSecret(ns, name, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string][]byte{ircv1.DefaultOperSecretKey: OperHash(password)},
	}
}

// MarkCertificateReady is standin.MarkCertificateReady.
var MarkCertificateReady = standin.MarkCertificateReady

// MarkDeploymentAvailable is standin.MarkDeploymentAvailable.
var MarkDeploymentAvailable = standin.MarkDeploymentAvailable

// MarkClaimBound is standin.MarkClaimBound.
var MarkClaimBound = standin.MarkClaimBound
