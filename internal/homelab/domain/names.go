package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

const (
	// AppName is the app.kubernetes.io/name label of a Domain's children.
	AppName = "domain"
	// NamespaceLabel on a child names the namespace of the Domain it belongs to.
	NamespaceLabel = "homelab.mortenolsen.pro/domain-namespace"
	// NameLabel on a child names the Domain it belongs to.
	NameLabel = "homelab.mortenolsen.pro/domain-name"
	// DefaultGatewayNamespace is where the Certificates and Gateways go unless the operator is told
	// otherwise: the namespace of Istio's default ingress gateway.
	DefaultGatewayNamespace = "istio-system"
)

// DefaultGatewaySelector picks Istio's default ingress gateway pods.
func DefaultGatewaySelector() map[string]string { return map[string]string{"istio": "ingressgateway"} }

// maxBase keeps ChildName and its "-tls" Secret within 63 characters (a DNS label).
const maxBase = 63 - len("-tls")

// ChildName names the Certificate and the Gateway of d in the gateway namespace. Domains of every
// namespace share that namespace, so the name carries d's namespace and name, and a hash of both keeps
// names that read alike apart (a-b/c and a/b-c): <namespace>-<name>, cut to fit, then -<8 hex digits>.
func ChildName(d *homelabv1.Domain) string {
	sum := sha256.Sum256([]byte(d.Namespace + "/" + d.Name))
	suffix := "-" + hex.EncodeToString(sum[:4])
	base := d.Namespace + "-" + d.Name
	if limit := maxBase - len(suffix); len(base) > limit {
		base = strings.TrimRight(base[:limit], "-.")
	}
	return base + suffix
}

// TLSSecretName is the Secret cert-manager writes the certificate into and the Gateway serves.
func TLSSecretName(d *homelabv1.Domain) string { return ChildName(d) + "-tls" }

// Labels are the labels every child of d carries: the operator's, and which Domain it belongs to.
func Labels(d *homelabv1.Domain) map[string]string {
	l := labels.Labels(AppName, d.Name)
	l[NamespaceLabel] = d.Namespace
	l[NameLabel] = d.Name
	return l
}

// BelongsTo says whether an object with labels l is a child the operator made for d: only those are
// applied over or deleted.
func BelongsTo(l map[string]string, d *homelabv1.Domain) bool {
	return labels.IsManaged(l) && l[NamespaceLabel] == d.Namespace && l[NameLabel] == d.Name
}

// Owner is the Domain a child with labels l belongs to, or false when l are not a Domain child's.
func Owner(l map[string]string) (namespace, name string, ok bool) {
	if !labels.IsManaged(l) || l[NamespaceLabel] == "" || l[NameLabel] == "" {
		return "", "", false
	}
	return l[NamespaceLabel], l[NameLabel], true
}
