package ergo

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

const (
	// ConfigKey is the ConfigMap key holding the rendered ircd.yaml.
	ConfigKey = "ircd.yaml"
	// DefaultImage is the ergo image used when Options.Image is empty: ergo's release v2.19.1, never a
	// moving tag, so which ergo runs (and which one may upgrade the datastore) is decided here, not by
	// a node's cache. make pin-images turns it into that release's digest for a release.
	DefaultImage = "ghcr.io/ergochat/ergo:v2.19.1"
	// DefaultImageVersion is the ergo release DefaultImage runs. It is written out because make
	// pin-images replaces DefaultImage by a digest, which names no version, and ChooseImage must still
	// know the datastore schema of the operator's own image. TestDefaultImageVersion keeps the two in step.
	DefaultImageVersion = "v2.19.1"
	// ConfigDigestAnnotation on the pod template carries ConfigDigest: changing it is what rolls the pod
	// when the config or the oper password hash changes.
	ConfigDigestAnnotation = labels.AnnotationDomain + "/config-digest"
	// LegacyConfigDigestAnnotation is where operator versions before the one annotation domain put the
	// digest. A running pod template keeps it until its digest changes (Options.LegacyDigestKey), so the
	// upgrade rolls no pod; the next roll moves it to ConfigDigestAnnotation.
	LegacyConfigDigestAnnotation = "irc.josie.cloud/config-digest"
	// RetainedForAnnotation on a claim kept under reclaimPolicy Retain holds the UID of the network it is
	// kept for, which the owner reference holds otherwise: a claim without it, or with another UID, was
	// kept from an earlier network of the same name.
	RetainedForAnnotation = labels.AnnotationDomain + "/retained-for"

	// ConfigSourceAnnotation is, on the ConfigMap, the ConfigSource its ircd.yaml was rendered from.
	ConfigSourceAnnotation = labels.AnnotationDomain + "/config-source"
	// ConfigStateAnnotation is, on the ConfigMap, the config digest's state after its ircd.yaml
	// (ConfigDigestPrefix, base64): with the oper hash and certificate it gives the pod's config digest.
	ConfigStateAnnotation = labels.AnnotationDomain + "/config-digest-state"
	// OperPasswordEnv feeds the oper's bcrypt hash to ergo through allow-environment-overrides, so the
	// hash lives only in the user's Secret and never in the ConfigMap.
	OperPasswordEnv = "ERGO__OPERS__ADMIN__PASSWORD"

	// OperName is the oper the network gets with operCredentials (/OPER admin <password>).
	OperName = "admin"
	// OperClass is OperName's class; it must exist in oper-classes or ergo refuses to start.
	OperClass = "server-admin"
)

// Where ergo keeps its datastore: the claim PVCName is mounted at DataDir, and ergo's datastore is the file
// DatastoreFile at the claim's root. A backup of the network reads that file (controllers/backup).
const (
	DataDir       = "/ircd"
	DatastoreFile = "ircd.db"
)

// DatastoreUser is the uid ergo's pod runs as, and so owns the datastore's files: ergoUID off OpenShift, nil
// on OpenShift, whose restricted SCC assigns the uid (the same for every pod of the namespace it admits).
// A pod that reads the datastore runs as this user, from the Deployment's own security context.
func DatastoreUser(openShift bool) *int64 {
	return ircnet.PodSecurityContext(openShift, ergoUID).RunAsUser
}

// AppName is the app.kubernetes.io/name label of every child of a network.
const AppName = "ergo"

// Labels are the recommended labels on every child object.
func Labels(n *ircv1.ErgoNetwork) map[string]string { return labels.Labels(AppName, n.Name) }

// SelectorLabels is the subset of Labels that never changes for a network, so it can sit in the
// Deployment's immutable selector and the Service's selector.
func SelectorLabels(n *ircv1.ErgoNetwork) map[string]string {
	return labels.SelectorLabels(AppName, n.Name)
}

// OwnerReference makes the network the controller of a child, so deleting the network garbage-collects
// every child and the controller's Owns() watches map child events back to it.
func OwnerReference(n *ircv1.ErgoNetwork) metav1.OwnerReference {
	return *metav1.NewControllerRef(n, ircv1.GroupVersion.WithKind("ErgoNetwork"))
}

// ConfigMapName is the ConfigMap holding ircd.yaml.
func ConfigMapName(n *ircv1.ErgoNetwork) string { return n.Name + "-config" }

// PVCName is the claim holding ergo's datastore.
func PVCName(n *ircv1.ErgoNetwork) string { return n.Name + "-data" }

// TLSSecretName is the Secret cert-manager writes the certificate into.
func TLSSecretName(n *ircv1.ErgoNetwork) string { return n.Name + "-tls" }

// DeploymentName is the Deployment running ergo.
func DeploymentName(n *ircv1.ErgoNetwork) string { return n.Name }

// ServiceName is the Service in front of ergo.
func ServiceName(n *ircv1.ErgoNetwork) string { return n.Name }

// CertificateName is the cert-manager Certificate.
func CertificateName(n *ircv1.ErgoNetwork) string { return n.Name }

// RouteName is the OpenShift Route.
func RouteName(n *ircv1.ErgoNetwork) string { return n.Name }
