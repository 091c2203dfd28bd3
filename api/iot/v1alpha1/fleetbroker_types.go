package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultBrokerImage is the official nats image of the nats-server version the operator is built and
// tested against (go.mod's github.com/nats-io/nats-server/v2).
const DefaultBrokerImage = "docker.io/library/nats:2.15.2-alpine"

// FleetBrokerSpec is the fleet's NATS: how many servers, their storage, how clients reach them, and
// whose keys they trust.
// +kubebuilder:validation:XValidation:rule="!has(self.jetStream) || !has(self.jetStream.replicas) || self.jetStream.replicas <= self.servers",message="jetStream.replicas cannot exceed servers: a bucket cannot have more copies than there are servers",fieldPath=".jetStream.replicas"
type FleetBrokerSpec struct {
	// Servers is how many nats-server processes form the JetStream cluster: 1 (no redundancy), 3 (one
	// may fail) or 5 (two may fail). JetStream's RAFT needs a majority, so an even count buys nothing
	// and is refused.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Enum=1;3;5
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Servers",xDescriptors="urn:alm:descriptor:com.tectonic.ui:podCount"
	Servers int32 `json:"servers,omitempty"`

	// JetStream is the fleet's buckets' replication and each server's storage.
	// +optional
	// +kubebuilder:default={}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="JetStream"
	JetStream FleetBrokerJetStream `json:"jetStream,omitempty"`

	// Image is the nats-server image; the official image of the version the operator is tested with by
	// default.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('\\\\s')",message="image must not contain whitespace"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image"
	Image string `json:"image,omitempty"`

	// Service is how devices and the operator reach the servers' client port.
	// +optional
	// +kubebuilder:default={type: ClusterIP}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Service"
	Service FleetBrokerService `json:"service,omitempty"`

	// TLS asks cert-manager for the servers' certificate: clients connect with TLS (tls://) and the
	// servers verify each other on their routes. Without it, the client port speaks plain NATS.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS"
	TLS *FleetBrokerTLS `json:"tls,omitempty"`

	// Authority is the fleet's permission model (fleet-auth's operator, accounts and signing keys).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Authority"
	Authority FleetBrokerAuthority `json:"authority,omitempty"`

	// Resources are the nats-server container's requests and limits.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors="urn:alm:descriptor:com.tectonic.ui:resourceRequirements"
	Resources *BrokerResources `json:"resources,omitempty"`
}

// FleetBrokerJetStream is the buckets' replication and the servers' storage.
type FleetBrokerJetStream struct {
	// Replicas is how many servers keep a copy of each fleet bucket (desired state, device records,
	// state, heartbeats): 1, 3 or 5, at most spec.servers. Unset, min(servers, 3).
	// +optional
	// +kubebuilder:validation:Enum=1;3;5
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Bucket Replicas"
	Replicas *int32 `json:"replicas,omitempty"`

	// Storage is each server's claim, where JetStream and the account resolver keep their files. The
	// claims are the StatefulSet's volumeClaimTemplates, which Kubernetes does not let change: it is
	// fixed once the broker exists.
	// +optional
	// +kubebuilder:default={size: "10Gi"}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storage cannot change once the servers' claims exist; make a new FleetBroker"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage"
	Storage FleetBrokerStorage `json:"storage,omitempty"`
}

// FleetBrokerStorage is one server's claim.
type FleetBrokerStorage struct {
	// Size is each server's claim; JetStream may fill 90% of it.
	// +optional
	// +kubebuilder:default="10Gi"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Size"
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName is the claims' storage class; the cluster's default when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Class",xDescriptors="urn:alm:descriptor:io.kubernetes:StorageClass"
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// FleetBrokerServiceType is the client Service's type.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type FleetBrokerServiceType string

// The client Service's types.
const (
	ServiceClusterIP    FleetBrokerServiceType = "ClusterIP"
	ServiceNodePort     FleetBrokerServiceType = "NodePort"
	ServiceLoadBalancer FleetBrokerServiceType = "LoadBalancer"
)

// FleetBrokerService is the client Service.
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || self.type != 'ClusterIP'",message="nodePort needs type NodePort or LoadBalancer",fieldPath=".nodePort"
type FleetBrokerService struct {
	// Type is the client Service's type: ClusterIP (in the cluster only), NodePort or LoadBalancer
	// (devices outside the cluster).
	// +kubebuilder:default=ClusterIP
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Type"
	Type FleetBrokerServiceType `json:"type,omitempty"`

	// NodePort is the client port's node port with type NodePort or LoadBalancer; Kubernetes picks one
	// when unset.
	// +optional
	// +kubebuilder:validation:Minimum=30000
	// +kubebuilder:validation:Maximum=32767
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Port",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	NodePort *int32 `json:"nodePort,omitempty"`
}

// FleetBrokerTLS is the cert-manager Certificate of the servers.
type FleetBrokerTLS struct {
	// IssuerRef is the cert-manager Issuer or ClusterIssuer that signs the servers' certificate. It must
	// put the CA into the Secret's ca.crt (CA and self-signed issuers do): the servers verify each other
	// with it and the operator trusts it.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer"
	IssuerRef BrokerIssuerRef `json:"issuerRef"`

	// DNSNames are extra names the certificate carries besides the Services' in-cluster names: the
	// names devices outside the cluster connect to.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DNS Names"
	DNSNames []string `json:"dnsNames,omitempty"`
}

// BrokerIssuerRef names a cert-manager issuer.
type BrokerIssuerRef struct {
	// Name is the issuer's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// Kind is Issuer (in the broker's namespace) or ClusterIssuer.
	// +kubebuilder:default=Issuer
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind"
	Kind string `json:"kind,omitempty"`
}

// FleetBrokerAuthority is where the fleet's keys come from.
type FleetBrokerAuthority struct {
	// SecretName names a Secret in the broker's namespace holding a fleet-auth authority (the files
	// `fleet-auth init` writes, as keys: operator.nk, operator.jwt, account.nk, account.jwt, system.nk,
	// system.jwt, signing-<role>.nk). The operator reads it and never changes it. Unset, the operator
	// generates one, once, into the Secret <name>-authority.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Authority Secret",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	SecretName string `json:"secretName,omitempty"`
}

// FleetBrokerStatus is what the operator made and what the servers report.
type FleetBrokerStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready and the parts it sums up: AuthorityReady, ConfigReady, CertificateReady,
	// ServiceReady and ServersReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ReadyServers is how many servers pass their readiness probe (JetStream up).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready Servers",xDescriptors="urn:alm:descriptor:com.tectonic.ui:podCount"
	ReadyServers int32 `json:"readyServers"`

	// ClientURL is the in-cluster URL clients connect to: nats://<name>.<namespace>.svc:4222, or
	// tls:// with spec.tls.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Client URL"
	ClientURL string `json:"clientURL,omitempty"`

	// OperatorCredentialsSecret names the Secret holding the platform operator's own NATS credentials
	// (key operator.creds).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Operator Credentials",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	OperatorCredentialsSecret string `json:"operatorCredentialsSecret,omitempty"`

	// AuthoritySecret names the Secret holding the fleet's authority the servers trust: the one
	// spec.authority names, or the one the operator generated. Device credentials are issued from it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Authority Secret",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	AuthoritySecret string `json:"authoritySecret,omitempty"`

	// Replicas is the fleet buckets' replica count in effect (spec.jetStream.replicas or its default).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Bucket Replicas"
	Replicas int32 `json:"replicas,omitempty"`
}

// FleetBroker runs the fleet's NATS: a JetStream cluster of 1, 3 or 5 nats-server processes (a
// StatefulSet, a claim each), trusting the fleet's permission model, which the operator generates and
// keeps or reads from a Secret; the operator connects to it with credentials of its own
// (docs/fleet-broker.md).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=fleetbrokers,singular=fleetbroker,shortName=fbroker,categories=iot
// +kubebuilder:printcolumn:name="Servers",type=integer,JSONPath=`.spec.servers`
// +kubebuilder:printcolumn:name="Ready Servers",type=integer,JSONPath=`.status.readyServers`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.clientURL`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="IoT Fleet Broker",resources={{StatefulSet,v1},{Service,v1},{Secret,v1},{PodDisruptionBudget,v1},{Certificate,v1},{Event,v1}}
type FleetBroker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the servers, their storage, their Service, TLS and authority.
	Spec FleetBrokerSpec `json:"spec"`
	// Status is what the operator made and how many servers are ready.
	// +optional
	Status FleetBrokerStatus `json:"status,omitempty"`
}

// DefaultBrokerStorage is each server's claim when spec.jetStream.storage.size is unset.
var DefaultBrokerStorage = resource.MustParse("10Gi")

// StorageSize is each server's claim: spec.jetStream.storage.size or DefaultBrokerStorage.
func (b *FleetBroker) StorageSize() resource.Quantity {
	if s := b.Spec.JetStream.Storage.Size; s != nil && !s.IsZero() {
		return *s
	}
	return DefaultBrokerStorage
}

// BucketReplicas is the fleet buckets' replica count: spec.jetStream.replicas, or min(servers, 3).
func (b *FleetBroker) BucketReplicas() int32 {
	if r := b.Spec.JetStream.Replicas; r != nil {
		return *r
	}
	return min(max(b.Spec.Servers, 1), 3)
}

// FleetBrokerList is a list of FleetBrokers.
// +kubebuilder:object:root=true
type FleetBrokerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the FleetBrokers.
	Items []FleetBroker `json:"items"`
}

// Condition types on a FleetBroker besides Ready.
const (
	// ConditionAuthority is True when the authority Secret holds a usable fleet authority.
	ConditionAuthority = "AuthorityReady"
	// ConditionBrokerConfig is True when the configuration and operator credentials Secrets are applied.
	ConditionBrokerConfig = "ConfigReady"
	// ConditionBrokerCertificate is True when cert-manager issued the servers' certificate (spec.tls).
	ConditionBrokerCertificate = "CertificateReady"
	// ConditionBrokerService is True when the client and cluster Services are applied.
	ConditionBrokerService = "ServiceReady"
	// ConditionServers is True when every server of the StatefulSet is ready.
	ConditionServers = "ServersReady"
)

// FleetBroker condition reasons.
const (
	// ReasonAuthorityGenerated is AuthorityReady: the operator generated the authority Secret.
	ReasonAuthorityGenerated = "AuthorityGenerated"
	// ReasonAuthorityProvided is AuthorityReady: spec.authority.secretName's Secret is used.
	ReasonAuthorityProvided = "AuthorityProvided"
	// ReasonAuthorityNotFound is AuthorityReady False: spec.authority.secretName names no Secret.
	ReasonAuthorityNotFound = "AuthoritySecretNotFound"
	// ReasonAuthorityInvalid is AuthorityReady False: the Secret does not hold a usable authority.
	ReasonAuthorityInvalid = "AuthorityInvalid"
	// ReasonAuthorityLost is AuthorityReady False: the generated authority Secret disappeared after
	// the servers were configured with it. The operator does not make new keys by itself (every
	// device credential would stop working); docs/fleet-broker.md says how to recover.
	ReasonAuthorityLost = "AuthorityLost"
	// ReasonBrokerApplied is a part whose children are applied.
	ReasonBrokerApplied = "Applied"
	// ReasonWaitingForAuthority is a part held until the authority is usable.
	ReasonWaitingForAuthority = "WaitingForAuthority"
	// ReasonServersReady is ServersReady True.
	ReasonServersReady = "ServersReady"
	// ReasonServersNotReady is ServersReady False while fewer servers than spec.servers are ready.
	ReasonServersNotReady = "ServersNotReady"
	// ReasonBrokerCertificatePending is CertificateReady False until cert-manager issues it.
	ReasonBrokerCertificatePending = "CertificatePending"
	// ReasonBrokerAPINotAvailable is CertificateReady False when spec.tls asks for cert-manager and the
	// cluster does not serve it.
	ReasonBrokerAPINotAvailable = "APINotAvailable"
	// ReasonBrokerNameConflict is a part whose child's name is taken by an object the operator did not make.
	ReasonBrokerNameConflict = "NameConflict"
)

func init() {
	SchemeBuilder.Register(&FleetBroker{}, &FleetBrokerList{})
}

// BrokerResources are a container's compute requests and limits (the part of corev1.ResourceRequirements
// a user sets, declared here so that OLM's form describes each field).
type BrokerResources struct {
	// Requests are the minimum resources, such as cpu: 100m and memory: 256Mi.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="resource quantities must not be negative"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Requests",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	Requests map[corev1.ResourceName]resource.Quantity `json:"requests,omitempty"`

	// Limits are the maximum resources, such as memory: 1Gi.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="resource quantities must not be negative"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Limits",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	Limits map[corev1.ResourceName]resource.Quantity `json:"limits,omitempty"`
}
