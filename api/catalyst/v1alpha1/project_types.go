package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProjectSpec is a deployable application: where its source lives, how it is deployed, and what each of
// its environments gets.
type ProjectSpec struct {
	// Source is the Git repository the project's environments are built from.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source"
	Source ProjectSource `json:"source"`

	// Deployment says how the project's manifests are rendered into an environment.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deployment"
	Deployment ProjectDeployment `json:"deployment"`

	// Resources are what each environment of the project may use.
	// +optional
	// +kubebuilder:default={}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources"
	Resources ProjectResources `json:"resources,omitempty"`

	// Ingress is how the project's environments are reached from outside the cluster. Every field
	// defaults to the operator's flags.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ingress"
	Ingress *ProjectIngress `json:"ingress,omitempty"`

	// NetworkPolicy is what the environments' pods may reach besides DNS.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Policy"
	NetworkPolicy *ProjectNetworkPolicy `json:"networkPolicy,omitempty"`

	// Build is where the environments' images are kept and how they are built. Without it the operator
	// neither checks nor builds images, and no environment of the project gets past BuildReady.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Build"
	Build *ProjectBuild `json:"build,omitempty"`

	// AllowedEnvironmentNamespaces are the namespaces, besides the Project's own, whose Environments may
	// name this Project in spec.projectRef. An Environment of any other namespace is refused at admission
	// and by the operator (NamespaceReady=False/ProjectNotAllowed): it gets nothing built or deployed with
	// this Project's repository, credentials or registry. Removing a namespace stops new builds and deploys
	// of its Environments; their namespaces are kept until they are deleted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Allowed Environment Namespaces"
	AllowedEnvironmentNamespaces []string `json:"allowedEnvironmentNamespaces,omitempty"`
}

// LocalObjectReference names an object in the Project's own namespace.
type LocalObjectReference struct {
	// Name is the object's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	Name string `json:"name"`
}

// ProjectBuild is the image registry of a project's environments and how their images are built. An
// environment's image is <registry>/<repository>:<commit SHA>: when the registry has it, nothing is built.
type ProjectBuild struct {
	// Registry is the image registry's host, with a port when it is not 443, such as ghcr.io or
	// registry.example.com:5000. The operator talks to it over https, except to 127.0.0.1 and localhost
	// and to the hosts of the operator's --catalyst-insecure-registries flag, which are spoken to over
	// plain http.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=259
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\\\\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*(:[0-9]{1,5})?$')",message="registry must be a host name or IPv4 address with an optional port, such as ghcr.io or registry.example.com:5000, without a scheme or path"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Registry"
	Registry string `json:"registry"`

	// Repository is the image repository inside the registry, such as team/app. When empty it is
	// <Project namespace>/<Project name>.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]+((\\\\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\\\\.|_|__|-+)[a-z0-9]+)*)*$')",message="repository must be lowercase path components of letters and digits separated by '/', '.', '_' or '-', such as team/app"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Repository"
	Repository string `json:"repository,omitempty"`

	// RegistrySecretRef names a kubernetes.io/dockerconfigjson Secret in the Project's namespace with the
	// registry's credentials: the operator reads it to check whether an image exists, and the build Job
	// mounts it to push. Anonymous access when empty.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Registry Secret"
	RegistrySecretRef *LocalObjectReference `json:"registrySecretRef,omitempty"`

	// Dockerfile is the Dockerfile's path inside the repository (not inside the context).
	// +optional
	// +kubebuilder:default=Dockerfile
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="dockerfile must be relative to the repository root and must not leave it ('..')"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Dockerfile"
	Dockerfile string `json:"dockerfile,omitempty"`

	// Context is the build context's directory inside the repository.
	// +optional
	// +kubebuilder:default="."
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="context must be relative to the repository root and must not leave it ('..')"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Context"
	Context string `json:"context,omitempty"`

	// TimeoutSeconds bounds a build: its Job's activeDeadlineSeconds.
	// +optional
	// +kubebuilder:default=1800
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=21600
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Timeout (seconds)",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
}

// ProjectSource is a Git repository and branch.
type ProjectSource struct {
	// RepositoryURL is the repository's https URL, such as https://github.com/org/repo.
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https://[^\\\\s/@]+/[^\\\\s]+$')",message="repositoryUrl must be an https URL with a path, such as https://github.com/org/repo"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Repository URL"
	RepositoryURL string `json:"repositoryUrl"`

	// Branch is the project's main branch, which deployment environments follow.
	// +optional
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^[/.-])|([.]{2})|([/.]$)|(@[{])|[\\\\s~^:?*\\\\[\\\\\\\\]')",message="branch must be a valid Git branch name (no spaces, '..', '~', '^', ':', '?', '*', '[', '\\\\' or '@{', and no leading '/', '.' or '-')"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Branch"
	Branch string `json:"branch,omitempty"`

	// SecretRef names a Secret in the Project's namespace with the repository's credentials: a token
	// (key token, sent as the https password) or a username and password (keys username and password).
	// The repository is read anonymously when empty.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials Secret"
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// DeploymentType is how a project's manifests are rendered.
// +kubebuilder:validation:Enum=helm;manifest;kustomize
type DeploymentType string

const (
	// DeploymentHelm renders a Helm chart.
	DeploymentHelm DeploymentType = "helm"
	// DeploymentManifest applies plain manifests.
	DeploymentManifest DeploymentType = "manifest"
	// DeploymentKustomize builds a kustomization.
	DeploymentKustomize DeploymentType = "kustomize"
)

// ProjectDeployment says how a project is deployed into an environment.
type ProjectDeployment struct {
	// Type is helm (a chart), manifest (plain YAML) or kustomize (a kustomization).
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Type"
	Type DeploymentType `json:"type"`

	// Path is the chart, manifest directory or kustomization inside the repository, such as
	// ./charts/app.
	// +optional
	// +kubebuilder:default="."
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="path must be relative to the repository root and must not leave it ('..')"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Path"
	Path string `json:"path,omitempty"`

	// Values are Helm values (for type helm) passed to the chart as they are written here; they are
	// kept whole, whatever their shape.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Values",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// ProjectResources are the compute resources of each environment.
type ProjectResources struct {
	// DefaultQuota is each environment namespace's ResourceQuota: its pods together may request and use
	// at most this much.
	// +optional
	// +kubebuilder:default={}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Default Quota"
	DefaultQuota Quota `json:"defaultQuota,omitempty"`
}

// Quota is a namespace's CPU and memory budget, requests and limits alike.
type Quota struct {
	// CPU is the namespace's total CPU, such as "1" or 500m.
	// +optional
	// +kubebuilder:default="1"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="cpu quota must be positive"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CPU"
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory is the namespace's total memory, such as 2Gi.
	// +optional
	// +kubebuilder:default="2Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="memory quota must be positive"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Memory"
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// ProjectIngress is how the project's environments are exposed.
type ProjectIngress struct {
	// Domain is the DNS domain environment hosts are made under: an environment's host is
	// <its namespace>.<domain>. Defaults to the operator's --catalyst-preview-domain.
	// +optional
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=189
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+$')",message="domain must be a lowercase DNS name with at least one dot, such as preview.example.com"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Domain"
	Domain string `json:"domain,omitempty"`

	// IssuerRef is the cert-manager issuer that signs the environments' certificates. Defaults to the
	// operator's --catalyst-cluster-issuer.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer"
	IssuerRef *IssuerRef `json:"issuerRef,omitempty"`

	// ClassName is the IngressClass of the environments' Ingresses. Defaults to the operator's
	// --catalyst-ingress-class (the cluster's default class when that is empty too).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ingress Class"
	ClassName string `json:"className,omitempty"`
}

// IssuerRef names a cert-manager issuer.
type IssuerRef struct {
	// Name is the issuer's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// Kind is ClusterIssuer, or Issuer for an issuer in each environment's namespace (which the
	// operator does not make, so ClusterIssuer is the usual choice).
	// +optional
	// +kubebuilder:default=ClusterIssuer
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind"
	Kind string `json:"kind,omitempty"`
}

// ProjectNetworkPolicy is what environments' pods may reach.
type ProjectNetworkPolicy struct {
	// Egress lists the destinations the pods may reach besides DNS. When empty, TCP 443 to any address.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Egress"
	Egress []EgressRule `json:"egress,omitempty"`
}

// EgressRule allows traffic to some ports of some addresses.
type EgressRule struct {
	// CIDRs are the destination address ranges, such as 10.0.0.0/8; any address when empty.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="each cidr must be an IPv4 or IPv6 CIDR, such as 10.0.0.0/8"
	// +listType=set
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CIDRs"
	CIDRs []string `json:"cidrs,omitempty"`

	// Ports are the destination ports.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ports"
	Ports []EgressPort `json:"ports"`
}

// EgressPort is one destination port.
type EgressPort struct {
	// Protocol is TCP, UDP or SCTP.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Protocol"
	Protocol string `json:"protocol,omitempty"`

	// Port is the port number.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Port"
	Port int32 `json:"port"`
}

// ProjectStatus is what the operator observed of the project.
type ProjectStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready says whether the project is usable by its environments.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Environments is the number of Environments that refer to the project, in any namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Environments"
	Environments int32 `json:"environments"`
}

// Project is a deployable application of a team; it lives in the team's namespace and its Environments
// refer to it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=catalyst
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')",message="metadata.name must be at most 63 lowercase letters, digits and '-': it is part of environment namespace names"
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.source.repositoryUrl`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.deployment.type`
// +kubebuilder:printcolumn:name="Environments",type=integer,JSONPath=`.status.environments`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Catalyst Project",resources={{Environment,v1alpha1}}
type Project struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the project the user asks for.
	Spec ProjectSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status ProjectStatus `json:"status,omitempty"`
}

// ProjectList is a list of Projects.
// +kubebuilder:object:root=true
type ProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Project `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Project{}, &ProjectList{})
}
