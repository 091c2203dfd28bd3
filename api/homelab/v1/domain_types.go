package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a Domain besides Ready.
const (
	// ConditionCertificate is True when cert-manager has issued the Domain's certificate.
	ConditionCertificate = "Certificate"
	// ConditionGateway is True when the Domain's Istio Gateway is applied.
	ConditionGateway = "Gateway"
)

// Reasons of a Domain's conditions (besides the shared ones: ReasonReady, ReasonApplyFailed,
// ReasonAPINotAvailable, ReasonNameConflict).
const (
	// ReasonCertificatePending is a Certificate cert-manager has not issued (yet).
	ReasonCertificatePending = "CertificatePending"
	// ReasonApplied is a child the API server holds as the operator wants it.
	ReasonApplied = "Applied"
	// ReasonHostnameTaken is a Domain whose hostname, or a name its wildcard covers, another Domain claimed
	// first (the oldest by creationTimestamp, then by namespace/name): it makes nothing, and removes what it
	// made, until that Domain is gone. The message names the owner's namespace.
	ReasonHostnameTaken = "HostnameTaken"
	// ReasonDomainNotAllowed is a Domain whose hostname or ClusterIssuer the operator's
	// --homelab-domain-policy does not allow its namespace: it makes nothing, and removes what it made.
	ReasonDomainNotAllowed = "DomainNotAllowed"
)

// DomainFinalizer holds a Domain until the Certificate, its TLS Secret and the Gateway the operator made
// in the gateway namespace are gone: owner references cannot cross namespaces, so the garbage collector
// would leave them behind.
const DomainFinalizer = "homelab.mortenolsen.pro/domain-cleanup"

// DomainSpec is a DNS name the cluster serves HTTPS for.
type DomainSpec struct {
	// Hostname is the domain: the certificate covers it and every name one label below it (*.hostname),
	// and the Gateway serves both. Lowercase, at least two labels, no wildcard, at most 243 characters
	// (so that authentik.<hostname> stays a valid DNS name). Immutable. A hostname belongs to one Domain in
	// the cluster: the first to claim it, or a name its wildcard covers (a.example.com overlaps
	// example.com, whose *.example.com covers it); a later Domain is refused.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=243
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+$')",message="hostname must be a lowercase DNS name with at least one dot, such as home.example.com (no wildcard: *.hostname is added)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="hostname is immutable: a hostname is claimed when its Domain is created; create a new Domain for another hostname"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hostname"
	Hostname string `json:"hostname"`

	// Issuer is the name of the cert-manager ClusterIssuer that signs the certificate (a ClusterIssuer,
	// because the Certificate lives in the operator's gateway namespace, not the Domain's).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer"
	Issuer string `json:"issuer"`

	// AllowedNamespaces are the namespaces, besides the Domain's own, whose AuthentikServers (and other
	// workloads) may be served under this Domain by naming it as "namespace/name"; "*" allows every
	// namespace. Empty: only the Domain's own namespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Allowed Namespaces"
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
}

// DomainStatus is what the operator observed of the Domain's certificate and gateway.
type DomainStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Certificate, Gateway and Ready (True when both are).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Gateway is the Istio Gateway serving the domain, as namespace/name: what a VirtualService lists in
	// spec.gateways to be served under the domain.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Gateway"
	Gateway string `json:"gateway,omitempty"`
	// CertificateSecret is the Secret, in the gateway's namespace, that cert-manager writes the
	// certificate into and the Gateway serves, as namespace/name.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Certificate Secret"
	CertificateSecret string `json:"certificateSecret,omitempty"`
}

// Domain is a DNS name served over HTTPS: a cert-manager Certificate for hostname and *.hostname and an
// Istio Gateway using it, both in the operator's gateway namespace. Workloads (an AuthentikServer) are
// served under it through VirtualServices bound to its Gateway.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=homelab
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.hostname`
// +kubebuilder:printcolumn:name="Gateway",type=string,JSONPath=`.status.gateway`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Domain",resources={{Certificate,v1},{Gateway,v1},{Secret,v1}}
type Domain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the domain and its certificate issuer.
	Spec DomainSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status DomainStatus `json:"status,omitempty"`
}

// DomainList is a list of Domains.
// +kubebuilder:object:root=true
type DomainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Domain `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Domain{}, &DomainList{})
}
