package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SojuBouncerSpec is the IRC bouncer a user asks for. Listeners, TLS, route and resources are the same
// types, with the same rules, as an ErgoNetwork's.
// +kubebuilder:validation:XValidation:rule="!self.listeners.exists(l, has(l.tls) && l.tls) || has(self.tls)",message="spec.tls is required when a listener has tls: true",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="!has(self.route) || has(self.tls)",message="spec.tls is required when spec.route is set",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="!has(self.route) || self.listeners.exists(l, has(l.tls) && l.tls)",message="spec.route needs a listener with tls: true to pass TLS through to",fieldPath=".route"
// +kubebuilder:validation:XValidation:rule="!has(self.route) || !has(self.route.host) || size(self.route.host) == 0 || !has(self.tls) || (!has(self.tls.dnsNames) || size(self.tls.dnsNames) == 0 ? self.route.host == self.hostname : self.tls.dnsNames.exists(d, d == self.route.host || (d.startsWith('*.') && self.route.host.indexOf('.') > 0 && self.route.host.substring(self.route.host.indexOf('.')) == d.substring(1))))",message="spec.route.host must be covered by the certificate: equal to one of spec.tls.dnsNames or match a one-label wildcard among them (*.example.com covers irc.example.com, not a.b.example.com), or equal spec.hostname when spec.tls.dnsNames is empty",fieldPath=".route.host"
// +kubebuilder:validation:XValidation:rule="!has(self.metrics) || !has(self.metrics.enabled) || !self.metrics.enabled || !has(self.metrics.port) || !self.listeners.exists(l, l.address.matches('^.*:[0-9]{1,5}$') && int(l.address.substring(l.address.lastIndexOf(':') + 1)) == self.metrics.port)",message="spec.metrics.port must differ from every listener's port while metrics are enabled",fieldPath=".metrics.port"
// +kubebuilder:validation:XValidation:rule="has(self.restore) == has(oldSelf.restore)",message="spec.restore is set only at creation: it cannot be added or removed",fieldPath=".restore"
type SojuBouncerSpec struct {
	// Hostname is the bouncer's DNS name: soju's server name (the hostname directive) and the default
	// certificate DNS name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+$')",message="hostname must be a lowercase DNS name with at least one dot, such as bouncer.example.com"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hostname"
	Hostname string `json:"hostname"`

	// Title is the server's title, which soju shows clients as the bouncer's name (the title directive).
	// Any printable text without line breaks or other control characters.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.matches('[\\\\x00-\\\\x1f\\\\x7f]')",message="title must not contain line breaks, tabs or other control characters"
	// +kubebuilder:validation:XValidation:rule="self != '{'",message="title cannot be a lone '{', which soju's config format reads as the start of a block"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Title"
	Title string `json:"title,omitempty"`

	// Listeners are the addresses soju accepts clients on ("ircs://" for TLS listeners, "irc+insecure://"
	// otherwise); each becomes a port of the bouncer's Service.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(l, !l.address.matches('^.*:[0-9]{1,5}$') || self.filter(m, m.address.matches('^.*:[0-9]{1,5}$') && int(m.address.substring(m.address.lastIndexOf(':') + 1)) == int(l.address.substring(l.address.lastIndexOf(':') + 1))).size() == 1)",message="listener ports must be unique, compared as numbers: :6667, 0.0.0.0:6667 and [::]:6667 all use port 6667"
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Listeners"
	Listeners []Listener `json:"listeners"`

	// TLS asks cert-manager for the certificate that TLS listeners serve. Required by TLS listeners and
	// by a route.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS"
	TLS *TLSSpec `json:"tls,omitempty"`

	// Route exposes the first TLS listener through an OpenShift Route with passthrough TLS.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Route"
	Route *RouteSpec `json:"route,omitempty"`

	// Resources are the compute resources of the soju container.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors="urn:alm:descriptor:com.tectonic.ui:resourceRequirements"
	Resources *ResourceRequirements `json:"resources,omitempty"`

	// Database is where the bouncer's PostgreSQL database is made, and what becomes of it when the
	// bouncer is deleted.
	// +optional
	// +kubebuilder:default={}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Database"
	Database SojuDatabaseSpec `json:"database,omitempty"`

	// AdminUser is soju's first user, an administrator, made (or its password set) before soju starts.
	// Without it the bouncer has no user until one is made by hand.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Admin User"
	AdminUser *SojuAdminUser `json:"adminUser,omitempty"`

	// Metrics serves soju's Prometheus metrics on a port of their own, with a PodMonitor for the
	// Prometheus Operator where the cluster serves PodMonitors. Off by default: the listener it needs
	// (http+insecure+prometheus) is in no soju release up to v0.10.1, and an older soju refuses to start
	// with it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Metrics"
	Metrics *SojuMetrics `json:"metrics,omitempty"`

	// Restore starts the new bouncer from a backup of a SojuBouncer of this namespace: a Backup
	// (Completed, of kind SojuBouncer), or a BackupStore with the source's name and the artifact's id.
	// The role and the empty database are made as usual, the backup is restored into it by a Job
	// (pg_restore --no-owner --no-acl, as the bouncer's role), and only then does soju start on it. A
	// backup written by a newer soju schema than the image's is refused (Restored=False, SchemaTooNew).
	// It is set only at creation and cannot change. A failed restore is not retried: delete the
	// SojuBouncer and create it again.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.restore cannot change"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore"
	Restore *RestoreSource `json:"restore,omitempty"`
}

// SojuMetrics is soju's Prometheus endpoint.
type SojuMetrics struct {
	// Enabled adds soju's listener http+insecure+prometheus://:<port> (plain HTTP, /metrics, on every
	// address of the pod), the container and Service port "metrics", and a PodMonitor where the cluster
	// serves the Prometheus Operator's API. It needs a soju built with that listener (after v0.10.1).
	// +optional
	// +kubebuilder:default=false
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Enabled",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	Enabled bool `json:"enabled,omitempty"`

	// Port is the metrics port, 1024-65535 (soju runs without the capability to bind lower ones), other
	// than every listener's.
	// +optional
	// +kubebuilder:default=9090
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Port"
	Port int32 `json:"port,omitempty"`
}

// SojuDatabaseSpec says on which PostgreSQL server the bouncer's database and role are made.
type SojuDatabaseSpec struct {
	// AdminSecretName names a Secret in the bouncer's namespace holding the login the operator makes the
	// database with: keys host, port, user, password and the optional sslmode (default prefer) and database
	// (default postgres), the format of a PostgresConnection's Secret. The login needs CREATEROLE and
	// CREATEDB (or superuser). Empty uses the operator-wide Secret given by --soju-database-secret.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Admin Secret Name",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	AdminSecretName string `json:"adminSecretName,omitempty"`

	// ReclaimPolicy says what happens to the database and its role when the bouncer is deleted. Delete:
	// they are dropped once soju's Deployment is gone. Retain: they stay on the server, and a new bouncer
	// of the same name in the same namespace takes them up again.
	// +optional
	// +kubebuilder:default=Delete
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Reclaim Policy"
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`
}

// SojuAdminUser is soju's first, administrator, user.
type SojuAdminUser struct {
	// Name is the user's soju username.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// PasswordSecret is the user's Secret holding the password, in clear text (soju hashes it). The
	// operator reads it and never changes or owns it; a new password there is set on the user at the next
	// start of soju, which the change itself causes.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Password Secret"
	PasswordSecret SecretKeyRef `json:"passwordSecret"`
}

// SecretKeyRef names one key of a Secret in the object's namespace.
type SecretKeyRef struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret Name",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	Name string `json:"name"`

	// Key is the Secret key.
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Key"
	Key string `json:"key,omitempty"`
}

// SojuBouncerStatus is what the operator observed of the bouncer.
type SojuBouncerStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready plus one condition per part the operator manages.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// DatabaseName is the name of the bouncer's database and of its role on the server.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Database Name"
	DatabaseName string `json:"databaseName,omitempty"`

	// DatabaseSecretName is the Secret holding the role's credentials ({name}-db).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Database Secret",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	DatabaseSecretName string `json:"databaseSecretName,omitempty"`

	// ServiceHost is the in-cluster DNS name of the bouncer's Service.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Service Host"
	ServiceHost string `json:"serviceHost,omitempty"`

	// Ports are the Service ports clients connect to.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ports"
	Ports []ListenerStatus `json:"ports,omitempty"`

	// RouteHost is the host of the bouncer's Route, once OpenShift admitted it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Route Host"
	RouteHost string `json:"routeHost,omitempty"`

	// LastBackupTime is when the newest Completed Backup (backup.josie.cloud) of this SojuBouncer, in its
	// namespace, was committed: that Backup's status.completionTime. Empty while there is none, or when the
	// cluster does not serve the backup API.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup Time"
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`

	// LastBackup is the name of that Backup, in the SojuBouncer's namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup"
	LastBackup string `json:"lastBackup,omitempty"`

	// RestoredFrom is the backup the bouncer was restored from (spec.restore), once restored.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored From"
	RestoredFrom *RestoredFrom `json:"restoredFrom,omitempty"`
}

// SojuBouncer is an IRC bouncer run by soju: its PostgreSQL database, config, certificate, Service and
// Route.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=soju,categories=irc
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]{0,58}[a-z0-9])?$')",message="metadata.name must start with a letter and be at most 60 lowercase letters, digits and '-': it names the bouncer's Service, and its Secret {name}-db"
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.hostname`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last Backup",type=date,JSONPath=`.status.lastBackupTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Soju IRC Bouncer",resources={{Deployment,v1},{ConfigMap,v1},{Secret,v1},{Service,v1},{Certificate,v1},{Route,v1},{PodMonitor,v1}}
type SojuBouncer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the bouncer the user asks for.
	Spec SojuBouncerSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status SojuBouncerStatus `json:"status,omitempty"`
}

// SojuBouncerList is a list of SojuBouncers.
// +kubebuilder:object:root=true
type SojuBouncerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SojuBouncer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&SojuBouncer{}, &SojuBouncerList{})
}
