package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels the web application puts on an Environment, and the operator on its namespace (with label-safe
// values). Namespace names are derived from the first three.
const (
	// LabelTeam names the team that owns the environment's project.
	LabelTeam = "catalyst.dev/team"
	// LabelProject names the project.
	LabelProject = "catalyst.dev/project"
	// LabelEnvironment names the environment.
	LabelEnvironment = "catalyst.dev/environment"
	// LabelBranch names the Git branch the environment runs (sanitized on the namespace).
	LabelBranch = "catalyst.dev/branch"
	// AnnotationBranch keeps, on the namespace, the raw branch name the label could not hold.
	AnnotationBranch = "catalyst.dev/branch"
	// AnnotationRetryBuild, set on an Environment to a new value (any value: a timestamp, a counter),
	// makes the operator build the image of a commit whose build failed once more.
	AnnotationRetryBuild = "catalyst.catalyst.dev/retry-build"
	// AnnotationEnvironmentID is the web application's identifier of an Environment. The operator never
	// writes the Environment's metadata, so the annotation is never removed.
	AnnotationEnvironmentID = "catalyst.dev/environment-id"
	// AnnotationAllowDeletion set to "true" on an Environment of type deployment lets it be deleted: the
	// admission webhook refuses to delete a deployment (staging, production) Environment without it.
	AnnotationAllowDeletion = "catalyst.dev/allow-deletion"
	// AnnotationPRNumber, on an environment's namespace, is the Environment's spec.source.prNumber.
	AnnotationPRNumber = "catalyst.dev/pr-number"
	// Finalizer holds a deleted Environment until its namespace is gone, and a deleted Project until its
	// Environments are.
	Finalizer = "catalyst.dev/finalizer"
)

// EnvironmentSpec is one running instance of a project: a pull-request preview, staging or production.
// +kubebuilder:validation:XValidation:rule="!has(self.expireAfter) || !has(self.type) || self.type == 'development'",message="spec.expireAfter is allowed only for type development (previews): a deployment environment never expires",fieldPath=".expireAfter"
type EnvironmentSpec struct {
	// ProjectRef names the Project the environment is an instance of.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Project"
	ProjectRef ProjectReference `json:"projectRef"`

	// Type is development (a preview, such as a pull request's) or deployment (staging, production).
	// +optional
	// +kubebuilder:default=development
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Type"
	Type EnvironmentType `json:"type,omitempty"`

	// ExpireAfter makes a development (preview) environment expire: the operator deletes the Environment
	// this long after it last observed a change of its spec (status.expiresAt), so every change extends
	// it. At least 1m; only for type development.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="spec.expireAfter must be a duration of at least 1m, such as 72h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Expire After"
	ExpireAfter *metav1.Duration `json:"expireAfter,omitempty"`

	// Source is the commit the environment runs.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source"
	Source EnvironmentSource `json:"source,omitempty"`

	// Config is the environment's runtime configuration.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Config"
	Config EnvironmentConfig `json:"config,omitempty"`
}

// ProjectReference names a Project.
type ProjectReference struct {
	// Name is the Project's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// Namespace is the Project's namespace; empty is the Environment's own namespace (never the team
	// label's). A Project in another namespace must list the Environment's namespace in its
	// spec.allowedEnvironmentNamespaces, or the Environment is refused at admission and by the operator.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Namespace",xDescriptors="urn:alm:descriptor:io.kubernetes:Namespace"
	Namespace string `json:"namespace,omitempty"`
}

// EnvironmentType is the kind of environment.
// +kubebuilder:validation:Enum=development;deployment
type EnvironmentType string

const (
	// EnvironmentDevelopment is a preview environment, such as a pull request's.
	EnvironmentDevelopment EnvironmentType = "development"
	// EnvironmentDeployment is a long-lived environment: staging or production.
	EnvironmentDeployment EnvironmentType = "deployment"
)

// EnvironmentSource is the commit an environment runs.
type EnvironmentSource struct {
	// CommitSHA is the full or abbreviated (at least 7) hexadecimal Git commit id, SHA-1 or SHA-256.
	// +optional
	// +kubebuilder:validation:MinLength=7
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[0-9a-f]+$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Commit SHA"
	CommitSHA string `json:"commitSha,omitempty"`

	// Branch is the Git branch, such as feature/login.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^[/.-])|([.]{2})|([/.]$)|(@[{])|[\\\\s~^:?*\\\\[\\\\\\\\]')",message="branch must be a valid Git branch name (no spaces, '..', '~', '^', ':', '?', '*', '[', '\\\\' or '@{', and no leading '/', '.' or '-')"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Branch"
	Branch string `json:"branch,omitempty"`

	// PRNumber is the pull request's number, for a pull-request preview. The operator records it on the
	// environment's namespace as the annotation catalyst.dev/pr-number (kubectl get -o wide shows it as PR).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pull Request"
	PRNumber int64 `json:"prNumber,omitempty"`
}

// EnvironmentConfig is an environment's runtime configuration.
type EnvironmentConfig struct {
	// EnvVars are environment variables for the application's containers; names are unique.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=name
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Environment Variables"
	EnvVars []EnvVar `json:"envVars,omitempty"`
}

// EnvVar is one environment variable: a value, or a key of a Secret.
// +kubebuilder:validation:XValidation:rule="!(has(self.value) && has(self.secretKeyRef))",message="an env var has either value or secretKeyRef, not both"
type EnvVar struct {
	// Name is the variable's name: a letter or '_', then letters, digits and '_' (such as DEBUG).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z_][A-Za-z0-9_]*$')",message="envVars name must start with a letter or '_' and hold only letters, digits and '_', such as DEBUG"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// Value is the variable's value.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Value"
	Value string `json:"value,omitempty"`

	// SecretKeyRef takes the value from a key of a Secret in the environment's namespace
	// (status.namespace) instead of value: the workload reads it from the Secret, and the operator never
	// reads it nor copies it into a ConfigMap, Helm values or the status.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret Key",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
}

// Phase is where an environment is in its life, as the web application shows it.
// +kubebuilder:validation:Enum=Pending;Building;Deploying;Ready;Failed
type Phase string

const (
	// PhasePending says the namespace is not ready yet (being made, or waiting for the Project).
	PhasePending Phase = "Pending"
	// PhaseBuilding says the environment's image is being built (not used before builds exist).
	PhaseBuilding Phase = "Building"
	// PhaseDeploying says the namespace is ready and the rest (ingress, certificate) is on its way.
	PhaseDeploying Phase = "Deploying"
	// PhaseReady says the environment is reachable at status.url.
	PhaseReady Phase = "Ready"
	// PhaseFailed says the environment cannot progress until the user changes something (see conditions).
	PhaseFailed Phase = "Failed"
)

// EnvironmentStatus is what the operator observed of the environment.
type EnvironmentStatus struct {
	// Phase is Pending, Building, Deploying, Ready or Failed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors="urn:alm:descriptor:io.kubernetes.phase"
	Phase Phase `json:"phase,omitempty"`

	// URL is the environment's public https address, set once its certificate is issued.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="URL",xDescriptors="urn:alm:descriptor:org.w3:link"
	URL string `json:"url,omitempty"`

	// Namespace is the namespace the environment got.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Namespace",xDescriptors="urn:alm:descriptor:io.kubernetes:Namespace"
	Namespace string `json:"namespace,omitempty"`

	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ExpiresAt is when the operator deletes the environment: spec.expireAfter after it first observed the
	// current generation. Empty without spec.expireAfter.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Expires At"
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// Conditions are NamespaceReady, BuildReady, DeploymentReady, IngressReady and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Build is the environment's image: the commit it is for, where it is and the last build Job.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Build"
	Build *BuildStatus `json:"build,omitempty"`

	// Deployment is the application deployed into the environment's namespace: the commit, how, the
	// Helm release or the objects applied, and what was refused.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Deployment"
	Deployment *DeploymentStatus `json:"deployment,omitempty"`
}

// BuildStatus is what the operator knows of an environment's image and its build.
type BuildStatus struct {
	// CommitSHA is the commit the image is (to be) built from: spec.source.commitSha when it was seen.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Commit SHA"
	CommitSHA string `json:"commitSha,omitempty"`

	// Image is the image's full reference, <registry>/<repository>:<commit SHA>, set once the registry
	// has it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Image"
	Image string `json:"image,omitempty"`

	// Digest is the image manifest's digest in the registry, such as sha256:..., set with image.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Digest"
	Digest string `json:"digest,omitempty"`

	// JobName is the last build Job the operator made for the commit, in the Project's namespace; empty
	// when the image was found in the registry without a build.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Build Job",xDescriptors="urn:alm:descriptor:io.kubernetes:batch:v1:Job"
	JobName string `json:"jobName,omitempty"`

	// Attempts is how many build Jobs the operator made for the commit: one, plus one for each new value
	// of the catalyst.catalyst.dev/retry-build annotation after a failure.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Attempts"
	Attempts int32 `json:"attempts,omitempty"`

	// Retry is the value the catalyst.catalyst.dev/retry-build annotation had when the last Job was made.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Retry"
	Retry string `json:"retry,omitempty"`

	// Failure is why the last build Job for the commit failed (the Job's reason and message); empty
	// unless it failed. No new Job is made for the commit while it is set, until the retry annotation
	// changes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Failure"
	Failure string `json:"failure,omitempty"`
}

// Environment is one instance of a Project (a pull-request preview, staging or production): a namespace of
// its own, locked down, with a quota and an https Ingress.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=env,categories=catalyst
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')",message="metadata.name must be at most 63 lowercase letters, digits and '-'"
// +kubebuilder:printcolumn:name="Project",type=string,JSONPath=`.spec.projectRef.name`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`,priority=1
// +kubebuilder:printcolumn:name="PR",type=integer,JSONPath=`.spec.source.prNumber`,priority=1
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Catalyst Environment",resources={{Namespace,v1},{ResourceQuota,v1},{LimitRange,v1},{NetworkPolicy,v1},{Ingress,v1},{Certificate,v1},{Job,v1},{Deployment,v1},{StatefulSet,v1},{Service,v1},{ConfigMap,v1},{Secret,v1}}
type Environment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the environment the user asks for.
	Spec EnvironmentSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status EnvironmentStatus `json:"status,omitempty"`
}

// EnvironmentList is a list of Environments.
// +kubebuilder:object:root=true
type EnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Environment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Environment{}, &EnvironmentList{})
}
