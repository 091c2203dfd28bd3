package v1alpha1

// SecretKeySelector names one key of a Secret in the environment's namespace.
type SecretKeySelector struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	Name string `json:"name"`

	// Key is the key inside the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Key"
	Key string `json:"key"`
}

// DeploymentStatus is the last deploy of an environment's application.
type DeploymentStatus struct {
	// Commit is the full id of the commit deployed (or whose deploy was refused or failed).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Commit"
	Commit string `json:"commit,omitempty"`

	// Type is how it was deployed: helm, manifest or kustomize.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Type"
	Type DeploymentType `json:"type,omitempty"`

	// Image is the image reference injected into the application, with its digest.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Image"
	Image string `json:"image,omitempty"`

	// Digest identifies what the deploy was made of (repository, commit, path, type, image, values and
	// env vars): while it is unchanged the operator neither fetches, renders nor applies again.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Digest"
	Digest string `json:"digest,omitempty"`

	// Release is the Helm release's name (type helm).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Helm Release"
	Release string `json:"release,omitempty"`

	// Revision is the Helm release's revision deployed (type helm).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Helm Revision"
	Revision int32 `json:"revision,omitempty"`

	// Objects is how many objects the deploy holds.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Objects"
	Objects int32 `json:"objects,omitempty"`

	// Inventory lists the objects applied (types manifest and kustomize): an object listed here that a
	// later commit no longer holds is deleted, when it still carries the operator's labels.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Inventory"
	Inventory []DeployedObject `json:"inventory,omitempty"`

	// Refused lists the objects the repository holds that the operator refused to apply (cluster-scoped,
	// or for another namespace), as Kind namespace/name; nothing was deployed while it is not empty.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Refused"
	Refused []string `json:"refused,omitempty"`
}

// DeployedObject identifies one object the operator applied into the environment's namespace.
type DeployedObject struct {
	// Group is the object's API group, empty for the core group.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Group"
	Group string `json:"group,omitempty"`
	// Version is the API version it was applied with.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Version"
	Version string `json:"version"`
	// Kind is the object's kind.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Kind"
	Kind string `json:"kind"`
	// Name is the object's name.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Name"
	Name string `json:"name"`
}
