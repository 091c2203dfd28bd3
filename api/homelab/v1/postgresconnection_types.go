package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a PostgresConnection besides Ready.
const (
	// ConditionSecret is True when the connection's Secret exists and holds every key the operator needs.
	ConditionSecret = "Secret"
	// ConditionServer is True when the operator can log in to the server and holds CREATEROLE and CREATEDB.
	ConditionServer = "Server"
)

// Reasons of a PostgresConnection's conditions.
const (
	// ReasonSecretNotFound is a spec.secret that names no Secret in the connection's namespace.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyMissing is a Secret without one of the keys host, port, user, password, or with a value
	// the operator cannot use (a port that is not a number, an unknown sslmode).
	ReasonSecretKeyMissing = "SecretKeyMissing"
	// ReasonConnected is a server the operator logged in to with enough privileges.
	ReasonConnected = "Connected"
	// ReasonAuthenticationFailed is a server that refused the Secret's user or password.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonUnreachable is a server the operator could not reach (DNS, refused or timed-out connection, TLS).
	ReasonUnreachable = "Unreachable"
	// ReasonInsufficientPrivileges is a login role without CREATEROLE or CREATEDB (or superuser).
	ReasonInsufficientPrivileges = "InsufficientPrivileges"
	// ReasonServerError is any other error the server answered with.
	ReasonServerError = "ServerError"
)

// PostgresConnectionSpec says where an existing PostgreSQL server is and how the operator logs in to it.
type PostgresConnectionSpec struct {
	// Secret is the name of a Secret in the connection's namespace holding the keys host, port, user and
	// password (and optionally sslmode: disable, allow, prefer, require, verify-ca or verify-full, default
	// prefer; and database: the database the operator connects to, default postgres). The user needs
	// CREATEROLE and CREATEDB (or superuser). The Secret is the user's: it is read, never changed. It must
	// be in the connection's own namespace: a reference into another namespace would let whoever may
	// create a PostgresConnection use any Secret in the cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	Secret string `json:"secret"`
	// AllowedNamespaces lists the namespaces whose PostgresDatabases may use this connection, besides the
	// connection's own namespace, which always may. "*" allows every namespace. Empty: only the
	// connection's namespace. A database in another namespace gets the condition Connection=False with
	// reason NotAllowed.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Allowed Namespaces"
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
	// MaxSessions is the operator's budget of admin sessions on this server: how many it keeps open at
	// most (in use and idle) as the Secret's login, shared by every PostgresDatabase on this connection,
	// so that up to that many creates, drops and checks run at once. Leave room under the server's
	// max_connections for the applications. Unset: 4. Databases are reconciled at most --max-concurrent-
	// reconciles at once (8 by default), so a budget above that is not used.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Sessions",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	MaxSessions *int32 `json:"maxSessions,omitempty"`
}

// SessionBudget is spec.maxSessions, 0 when unset (the operator's default).
func (s *PostgresConnectionSpec) SessionBudget() int {
	if s.MaxSessions == nil {
		return 0
	}
	return int(*s.MaxSessions)
}

// PostgresConnectionStatus is what the operator found when it logged in.
type PostgresConnectionStatus struct {
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
	// ServerVersion is the server's version (server_version), once the operator logged in.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Server Version"
	ServerVersion string `json:"serverVersion,omitempty"`
}

// PostgresConnection is an existing PostgreSQL server on which the operator makes databases and roles for
// PostgresDatabases. It is Ready when the operator can log in with the Secret's credentials and holds
// CREATEROLE and CREATEDB.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pgconn,categories=homelab
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secret`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.serverVersion`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="PostgreSQL Connection",resources={{Secret,v1}}
type PostgresConnection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the Secret with the server's address and credentials.
	Spec PostgresConnectionSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status PostgresConnectionStatus `json:"status,omitempty"`
}

// PostgresConnectionList is a list of PostgresConnections.
// +kubebuilder:object:root=true
type PostgresConnectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgresConnection `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PostgresConnection{}, &PostgresConnectionList{})
}
