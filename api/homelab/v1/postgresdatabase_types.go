package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a PostgresDatabase besides Ready.
const (
	// ConditionConnection is True when the referenced PostgresConnection exists, is Ready and lets the
	// database's namespace use it.
	ConditionConnection = "Connection"
	// ConditionDatabase is True when the role and the database exist on the server as the spec asks.
	ConditionDatabase = "Database"
	// ConditionCredentials is True when the generated Secret holds the role's current credentials.
	ConditionCredentials = "Credentials"
	// ConditionCleanup is set while a deleted PostgresDatabase waits to drop its database and role.
	ConditionCleanup = "Cleanup"
	// ConditionRestored is set on a PostgresDatabase with spec.restore: True once the backup is restored
	// into its new database; until then the Secret is not written and Ready is False.
	ConditionRestored = "Restored"
)

// Reasons of the Restored condition (docs/backup.md, "Restoring a PostgresDatabase").
const (
	// ReasonRestoring is the restore Job running, or about to be created.
	ReasonRestoring = "Restoring"
	// ReasonRestored is the backup restored: the Secret is written and the database handed over.
	ReasonRestored = "Restored"
	// ReasonRestoreFailed is the restore Job failed; its message is the program's last words. The new
	// database is unusable and nothing is retried: delete the PostgresDatabase and create it again.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonBackupNotFound is spec.restore's Backup or BackupStore missing from the namespace, or an
	// artifact with no manifest in the store.
	ReasonBackupNotFound = "BackupNotFound"
	// ReasonBackupNotCompleted is a Backup that is not (yet) Completed: the restore waits for it.
	ReasonBackupNotCompleted = "BackupNotCompleted"
	// ReasonWrongKind is a Backup (or an artifact) of another kind than PostgresDatabase.
	ReasonWrongKind = "WrongKind"
	// ReasonStoreNotReady is spec.restore's store (or the Backup's) not Ready: the restore waits for it.
	ReasonStoreNotReady = "StoreNotReady"
	// ReasonOperatorImageUnknown is an operator that does not know its own image (RELATED_IMAGE_OPERATOR
	// unset), which the restore Job's init container runs: the restore waits.
	ReasonOperatorImageUnknown = "OperatorImageUnknown"
	// ReasonTargetNotEmpty is a database already on the server holding tables (one kept by reclaimPolicy
	// Retain being taken up again): a restore never writes into it. Delete the PostgresDatabase, or drop
	// spec.restore by creating it again without one.
	ReasonTargetNotEmpty = "TargetNotEmpty"
)

// Reasons of a PostgresDatabase's conditions.
const (
	// ReasonNotAllowed is a PostgresConnection in another namespace that does not list the database's
	// namespace in spec.allowedNamespaces.
	ReasonNotAllowed = "NotAllowed"
	// ReasonDatabaseClaimed is a database or role name already on the server that another PostgresDatabase
	// claims, or that the operator did not create. It is left untouched.
	ReasonDatabaseClaimed = "DatabaseClaimed"
	// ReasonSQLFailed is a statement the server refused.
	ReasonSQLFailed = "SQLFailed"
	// ReasonCleanupBlocked is a deleted PostgresDatabase whose connection is missing, not Ready or
	// unreachable: the operator retries, and the release annotation lets it go without touching the server.
	ReasonCleanupBlocked = "CleanupBlocked"
	// ReasonCleanupAbandoned is the Warning event of a deleted PostgresDatabase let go with its database
	// and role left on the server: by the release annotation, or because the cleanup stayed blocked past
	// the cleanup timeout (30 minutes after the deletion). The same reason as a SojuBouncer's.
	ReasonCleanupAbandoned = "CleanupAbandoned"
)

// Annotations users set on a PostgresDatabase.
const (
	// AnnotationRotatePassword asks for a new password: whenever its value changes (any value, a date
	// is handy), the operator makes a new password, sets it on the role and writes it to the Secret.
	AnnotationRotatePassword = "homelab.mortenolsen.pro/rotate-password"
	// AnnotationReleaseFinalizer, set to "true", lets a deleted PostgresDatabase go without touching the
	// server: the database and the role stay. It is the way out when the server is gone for good.
	AnnotationReleaseFinalizer = "homelab.mortenolsen.pro/release-finalizer"
)

// PostgresDatabaseFinalizer holds a PostgresDatabase until its database and role are dropped (reclaimPolicy
// Delete) or left on purpose (Retain, or the release annotation).
const PostgresDatabaseFinalizer = "homelab.mortenolsen.pro/postgres-database"

// DatabaseReclaimPolicy is what becomes of the database and role when the PostgresDatabase is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type DatabaseReclaimPolicy string

const (
	// DatabaseReclaimDelete drops the database (WITH (FORCE), closing its sessions) and the role.
	DatabaseReclaimDelete DatabaseReclaimPolicy = "Delete"
	// DatabaseReclaimRetain leaves the database and the role on the server; a new PostgresDatabase of the
	// same namespace and name takes them up again.
	DatabaseReclaimRetain DatabaseReclaimPolicy = "Retain"
)

// PostgresDatabaseSpec asks for a database, and a login role that owns it, on a PostgresConnection's server.
// +kubebuilder:validation:XValidation:rule="has(self.databaseName) == has(oldSelf.databaseName)",message="spec.databaseName cannot be added or removed after creation",fieldPath=".databaseName"
// +kubebuilder:validation:XValidation:rule="has(self.restore) == has(oldSelf.restore)",message="spec.restore is set only at creation: it cannot be added or removed",fieldPath=".restore"
type PostgresDatabaseSpec struct {
	// Connection is the PostgresConnection to make the database on: "name" in the database's namespace,
	// or "namespace/name". It cannot change: the database lives on that server.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.connection cannot change: the database lives on that server"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Connection"
	Connection string `json:"connection"`
	// ReclaimPolicy says what happens to the database and role on the server when the PostgresDatabase is
	// deleted: Delete drops both, Retain leaves both. It may change at any time.
	// +optional
	// +kubebuilder:default=Delete
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Reclaim Policy"
	ReclaimPolicy DatabaseReclaimPolicy `json:"reclaimPolicy,omitempty"`
	// DatabaseName names the database and its role on the server. Empty: a name derived from the namespace
	// and name (sanitized, at most 63 bytes, ending in a hash of both, so two PostgresDatabases never get
	// the same one). Lowercase letters, digits and '_', starting with a letter or '_'; not postgres,
	// template0, template1 or a pg_ name. A name another PostgresDatabase already claims is refused with
	// Database=False, reason DatabaseClaimed. It cannot change.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['postgres', 'template0', 'template1', 'public']) && !self.startsWith('pg_')",message="databaseName cannot be postgres, template0, template1, public or start with pg_"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.databaseName cannot change"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Database Name"
	DatabaseName string `json:"databaseName,omitempty"`
	// Restore starts the new database from a backup of a PostgresDatabase of this namespace: a Backup
	// (Completed, of kind PostgresDatabase), or a BackupStore with the source's name and the artifact's
	// id. The role and the empty database are made as usual, the backup is restored into it by a Job
	// (pg_restore --no-owner --no-acl, as the database's role, so the role owns every restored object),
	// and only then is the Secret written and the database Ready. It is set only at creation and cannot
	// change. A failed restore is not retried: delete and create the PostgresDatabase again.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.restore cannot change"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore"
	Restore *RestoreSource `json:"restore,omitempty"`
}

// PostgresDatabaseStatus is what the operator made on the server and in the namespace.
type PostgresDatabaseStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Cleanup (while deleting), Connection, Database, Restored (with spec.restore),
	// Credentials and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// DatabaseName is the database's name on the server; the role has the same name.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Database Name"
	DatabaseName string `json:"databaseName,omitempty"`
	// SecretName is the Secret (in the PostgresDatabase's namespace, named <name>-postgres) holding host,
	// port, user, password, database and url.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Secret Name",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	SecretName string `json:"secretName,omitempty"`
	// RestoredFrom is the backup the database was restored from (spec.restore), once restored.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored From"
	RestoredFrom *RestoredFrom `json:"restoredFrom,omitempty"`
	// LastBackupTime is when the newest Completed Backup (backup.josie.cloud) of this PostgresDatabase, in
	// its namespace, was committed: that Backup's status.completionTime. Empty while there is none, or when
	// the cluster does not serve the backup API.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup Time"
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`
	// LastBackup is the name of that Backup, in the PostgresDatabase's namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup"
	LastBackup string `json:"lastBackup,omitempty"`
}

// PostgresDatabase is a database on a PostgresConnection's server, owned by a login role of the same name
// that only it may connect to (REVOKE ALL ON DATABASE ... FROM PUBLIC), and a Secret <name>-postgres with
// the role's credentials. The password is made once. Deleting it drops the database and role
// (reclaimPolicy Delete) or leaves them (Retain).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pgdb,categories=homelab
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 244",message="metadata.name must be at most 244 characters: the Secret is named <name>-postgres"
// +kubebuilder:printcolumn:name="Connection",type=string,JSONPath=`.spec.connection`
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.status.databaseName`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.status.secretName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Last Backup",type=date,JSONPath=`.status.lastBackupTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="PostgreSQL Database",resources={{Secret,v1}}
type PostgresDatabase struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the database the user asks for.
	Spec PostgresDatabaseSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status PostgresDatabaseStatus `json:"status,omitempty"`
}

// PostgresDatabaseList is a list of PostgresDatabases.
// +kubebuilder:object:root=true
type PostgresDatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgresDatabase `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PostgresDatabase{}, &PostgresDatabaseList{})
}
