package authentik

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

const (
	// AppName is the app.kubernetes.io/name label of an AuthentikServer's children.
	AppName = "authentik"
	// DefaultImage is the authentik image when the operator is given none (RELATED_IMAGE_AUTHENTIK). It
	// is pinned to a release that still keeps its cache and tasks in Redis.
	DefaultImage = "ghcr.io/goauthentik/server:2025.2.3"
	// HTTPPort is the port authentik's server listens on for plain HTTP.
	HTTPPort = 9000
	// ServicePort is the Service's port in front of HTTPPort.
	ServicePort = 80
	// ComponentLabel tells the server's pods from the worker's.
	ComponentLabel = "app.kubernetes.io/component"
)

// Keys of the generated Secret.
const (
	SecretKeyKey         = "secret-key"
	BootstrapPasswordKey = "bootstrap-password"
	BootstrapTokenKey    = "bootstrap-token"
)

// SecretKeys are the keys the generated Secret holds, in order.
var SecretKeys = []string{SecretKeyKey, BootstrapPasswordKey, BootstrapTokenKey}

// Keys of the PostgresDatabase Secret (<database>-postgres) and of the RedisConnection Secret that the pods
// read.
const (
	DatabaseHostKey     = "host"
	DatabasePortKey     = "port"
	DatabaseUserKey     = "user"
	DatabasePasswordKey = "password"
	DatabaseNameKey     = "database"
	RedisHostKey        = "host"
	RedisPortKey        = "port"
	RedisUserKey        = "user"
	RedisPasswordKey    = "password"
)

// SecretName is the generated Secret.
func SecretName(a *homelabv1.AuthentikServer) string { return a.Name + "-authentik" }

// ServerName is the server Deployment.
func ServerName(a *homelabv1.AuthentikServer) string { return a.Name + "-server" }

// WorkerName is the worker Deployment.
func WorkerName(a *homelabv1.AuthentikServer) string { return a.Name + "-worker" }

// ServiceName is the Service in front of the server.
func ServiceName(a *homelabv1.AuthentikServer) string { return a.Name }

// VirtualServiceName is the VirtualService routing the host to the Service.
func VirtualServiceName(a *homelabv1.AuthentikServer) string { return a.Name }

// Host is the name authentik is served under.
func Host(domainHostname string) string { return "authentik." + domainHostname }

// Labels are the labels every child carries.
func Labels(a *homelabv1.AuthentikServer) map[string]string { return labels.Labels(AppName, a.Name) }

// SelectorLabels selects one component's pods (server or worker).
func SelectorLabels(a *homelabv1.AuthentikServer, component string) map[string]string {
	l := labels.SelectorLabels(AppName, a.Name)
	l[ComponentLabel] = component
	return l
}

// OwnerReference makes the AuthentikServer the controller of a child.
func OwnerReference(a *homelabv1.AuthentikServer) metav1.OwnerReference {
	return *metav1.NewControllerRef(a, homelabv1.GroupVersion.WithKind("AuthentikServer"))
}

func objectMeta(a *homelabv1.AuthentikServer, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: a.Namespace, Labels: Labels(a),
		OwnerReferences: []metav1.OwnerReference{OwnerReference(a)},
	}
}
