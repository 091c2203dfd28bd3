package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A RedisConnection's conditions are ConditionSecret (the Secret exists and holds usable keys),
// ConditionServer (the server answered PING with the Secret's credentials) and ConditionReady. Their
// reasons are the ones PostgresConnection uses for the same failures: ReasonSecretNotFound,
// ReasonSecretKeyMissing, ReasonConnected, ReasonAuthenticationFailed, ReasonUnreachable and
// ReasonServerError.

// RedisConnectionSpec says where an existing Redis server is and how to log in to it.
type RedisConnectionSpec struct {
	// Secret is the name of a Secret in the connection's namespace holding the keys host and port, and
	// optionally user (an ACL user; empty or absent: the default user) and password (absent: no AUTH).
	// The Secret is the user's: it is read, never changed. Workloads that use the connection (an
	// AuthentikServer) read the same keys from it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	Secret string `json:"secret"`
}

// RedisConnectionStatus is what the operator found when it asked the server for PING.
type RedisConnectionStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Secret, Server and Ready (True when both are).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Address is the host:port the operator reached, from the Secret.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Address"
	Address string `json:"address,omitempty"`
}

// RedisConnection is an existing Redis server that workloads (an AuthentikServer) use. It is Ready when
// the server answers PING with the Secret's credentials; the operator asks again every few minutes.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=redisconn,categories=homelab
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secret`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Redis Connection",resources={{Secret,v1}}
type RedisConnection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the Secret with the server's address and credentials.
	Spec RedisConnectionSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status RedisConnectionStatus `json:"status,omitempty"`
}

// RedisConnectionList is a list of RedisConnections.
// +kubebuilder:object:root=true
type RedisConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedisConnection `json:"items"`
}

func init() {
	SchemeBuilder.Register(&RedisConnection{}, &RedisConnectionList{})
}
