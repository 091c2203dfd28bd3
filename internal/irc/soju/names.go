package soju

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ircnet"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

const (
	// AppName is the app.kubernetes.io/name label of every child of a bouncer.
	AppName = "soju"
	// Kind is the custom resource's kind, as the owner comments on the database server name it.
	Kind = "SojuBouncer"
	// DefaultImage is the soju image used when Options.Image is empty: soju's release v0.10.1. The image
	// must hold soju and sojudb on its PATH and /bin/sh (the first-admin init container's shell).
	DefaultImage = "codeberg.org/emersion/soju:v0.10.1"
	// ConfigKey is the ConfigMap key holding soju's rendered config.
	ConfigKey = "config"
	// ConfigDigestAnnotation on the pod template carries the config digest: changing it rolls the pod.
	ConfigDigestAnnotation = labels.AnnotationDomain + "/config-digest"
)

// Labels are the recommended labels on every child object.
func Labels(b *ircv1.SojuBouncer) map[string]string { return labels.Labels(AppName, b.Name) }

// SelectorLabels is the subset of Labels that never changes for a bouncer.
func SelectorLabels(b *ircv1.SojuBouncer) map[string]string {
	return labels.SelectorLabels(AppName, b.Name)
}

// OwnerReference makes the bouncer the controller of a child.
func OwnerReference(b *ircv1.SojuBouncer) metav1.OwnerReference {
	return *metav1.NewControllerRef(b, ircv1.GroupVersion.WithKind(Kind))
}

// ChildMeta is the identity the shared builders (internal/irc/ircnet) give a bouncer's children.
func ChildMeta(b *ircv1.SojuBouncer) ircnet.Meta {
	return ircnet.Meta{Namespace: b.Namespace, Labels: Labels(b), Selector: SelectorLabels(b), Owner: OwnerReference(b)}
}

// ConfigMapName is the ConfigMap holding soju's config.
func ConfigMapName(b *ircv1.SojuBouncer) string { return b.Name + "-config" }

// DatabaseSecretName is the Secret with the database role's credentials.
func DatabaseSecretName(b *ircv1.SojuBouncer) string { return b.Name + "-db" }

// TLSSecretName is the Secret cert-manager writes the certificate into.
func TLSSecretName(b *ircv1.SojuBouncer) string { return b.Name + "-tls" }

// DeploymentName is the Deployment running soju; the Service, Certificate and Route share the name.
func DeploymentName(b *ircv1.SojuBouncer) string { return b.Name }

// ServiceName is the Service in front of soju.
func ServiceName(b *ircv1.SojuBouncer) string { return b.Name }

// CertificateName is the cert-manager Certificate.
func CertificateName(b *ircv1.SojuBouncer) string { return b.Name }

// RouteName is the OpenShift Route.
func RouteName(b *ircv1.SojuBouncer) string { return b.Name }

// DatabaseName names the bouncer's database and its role on the server (postgres.Name: sanitized,
// at most 63 bytes, a hash of namespace/name at the end).
func DatabaseName(b *ircv1.SojuBouncer) string { return postgres.Name(b.Namespace, b.Name) }

// DatabaseOwner is the owner comment the database and role carry on the server: a role or database
// another object's comment names is never changed or dropped.
func DatabaseOwner(b *ircv1.SojuBouncer) postgres.Owner {
	return postgres.Owner{Kind: Kind, Namespace: b.Namespace, Name: b.Name, UID: string(b.UID)}
}
