package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an AuthentikServer besides Ready: one per dependency (ConditionDomain,
// ConditionDatabase: True when spec.database names a PostgresDatabase that is Ready, and ConditionRedis),
// then one per part.
const (
	// ConditionDomain is True when spec.domain names a Domain that is Ready.
	ConditionDomain = "Domain"
	// ConditionRedis is True when spec.redis names a RedisConnection that is Ready.
	ConditionRedis = "Redis"
	// ConditionGeneratedSecret is True when the Secret holding authentik's secret key, bootstrap password
	// and bootstrap token exists.
	ConditionGeneratedSecret = "GeneratedSecret"
	// ConditionServerDeployment is True when authentik's server Deployment is available.
	ConditionServerDeployment = "ServerDeployment"
	// ConditionWorkerDeployment is True when authentik's worker Deployment is available.
	ConditionWorkerDeployment = "WorkerDeployment"
	// ConditionService is True when the Service in front of the server is applied.
	ConditionService = "Service"
	// ConditionRoute is True when the VirtualService routing authentik.<domain hostname> to the Service
	// through the Domain's Gateway is applied.
	ConditionRoute = "Route"
)

// Reasons of an AuthentikServer's conditions (besides the shared ones: ReasonReady, ReasonApplied,
// ReasonMissingDependency, ReasonWaitingForDependency, ReasonApplyFailed, ReasonAPINotAvailable,
// ReasonNameConflict).
const (
	// ReasonDependencyNotAllowed is a database or redis reference to another namespace: a pod reads
	// Secrets only from its own namespace, and copying another namespace's credentials would hand them to
	// whoever can create an AuthentikServer here. It is also a domain reference to another namespace's
	// Domain that does not list the AuthentikServer's namespace in spec.allowedNamespaces.
	ReasonDependencyNotAllowed = "DependencyNotAllowed"
	// ReasonDeploymentPending is a Deployment without an available pod running its latest spec.
	ReasonDeploymentPending = "DeploymentPending"
	// ReasonSecretGenerated is the generated Secret, made on the first reconcile and kept from then on.
	ReasonSecretGenerated = "SecretGenerated"
)

// AuthentikServerSpec names the three objects an authentik identity provider runs on. A reference is
// "name" (in the AuthentikServer's namespace) or "namespace/name".
type AuthentikServerSpec struct {
	// Domain is the Domain authentik is served under, as authentik.<hostname>, through the Domain's
	// Gateway. It may be in another namespace only when that Domain lists the AuthentikServer's namespace
	// (or "*") in its spec.allowedNamespaces.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Domain"
	Domain string `json:"domain"`
	// Database is the PostgresDatabase authentik stores its data in. It must be in the AuthentikServer's
	// namespace (a "namespace/name" reference naming that namespace is accepted): the pods read its
	// Secret, and pods read Secrets only from their own namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Database"
	Database string `json:"database"`
	// Redis is the RedisConnection authentik keeps its cache and task queue in. Like database, it must be
	// in the AuthentikServer's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Redis"
	Redis string `json:"redis"`
}

// AuthentikServerStatus is what the operator observed of the dependencies and the parts it runs.
type AuthentikServerStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Domain, Database and Redis (one per dependency), GeneratedSecret, ServerDeployment,
	// WorkerDeployment, Service, Route and Ready (True when all are).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// URL is where authentik is served: https://authentik.<domain hostname>/.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="URL",xDescriptors="urn:alm:descriptor:org.w3:link"
	URL string `json:"url,omitempty"`
	// SecretName is the generated Secret in the AuthentikServer's namespace with the keys secret-key,
	// bootstrap-password (the akadmin user's first password) and bootstrap-token (an API token).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Secret",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	SecretName string `json:"secretName,omitempty"`
}

// AuthentikServer is an authentik identity provider: a server and a worker Deployment, a Service and a
// VirtualService under the Domain, running on a PostgresDatabase and a RedisConnection. Nothing is made
// until all three dependencies are Ready; the secret key and bootstrap credentials are generated once.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=authentik,categories=homelab
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]{0,41}[a-z0-9])?$')",message="metadata.name must start with a letter and be at most 43 lowercase letters, digits and '-': it names the Deployments and the Service with a suffix"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Authentik Server",resources={{Deployment,v1},{Service,v1},{Secret,v1},{VirtualService,v1}}
type AuthentikServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the dependencies.
	Spec AuthentikServerSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status AuthentikServerStatus `json:"status,omitempty"`
}

// AuthentikServerList is a list of AuthentikServers.
// +kubebuilder:object:root=true
type AuthentikServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AuthentikServer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AuthentikServer{}, &AuthentikServerList{})
}
