package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SourceKind is a kind whose data the operator holds and backs up.
// +kubebuilder:validation:Enum=PostgresDatabase;SojuBouncer;ErgoNetwork
type SourceKind string

const (
	// SourcePostgresDatabase is a homelab.mortenolsen.pro/v1 PostgresDatabase: a pg_dump of its database.
	SourcePostgresDatabase SourceKind = "PostgresDatabase"
	// SourceSojuBouncer is an irc.josie.cloud/v1alpha1 SojuBouncer: a pg_dump of the bouncer's database.
	SourceSojuBouncer SourceKind = "SojuBouncer"
	// SourceErgoNetwork is an irc.josie.cloud/v1alpha1 ErgoNetwork: a copy of ergo's datastore, ircd.db,
	// read from its claim on the ergo pod's node.
	SourceErgoNetwork SourceKind = "ErgoNetwork"
)

// BackupSource is the object whose data is backed up, in the Backup's namespace.
type BackupSource struct {
	// Kind is PostgresDatabase, SojuBouncer or ErgoNetwork.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source Kind"
	Kind SourceKind `json:"kind"`
	// Name is the object's name in the Backup's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source Name"
	Name string `json:"name"`
}

// ArtifactPolicy is what becomes of a Backup's artifact in the store when the Backup object is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type ArtifactPolicy string

const (
	// ArtifactRetain leaves the artifact in the store (the default): deleting objects never deletes data.
	ArtifactRetain ArtifactPolicy = "Retain"
	// ArtifactDelete deletes the artifact from the store with the Backup object.
	ArtifactDelete ArtifactPolicy = "Delete"
)

// BackupPhase is where a Backup is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

const (
	// BackupPending waits for its store or source.
	BackupPending BackupPhase = "Pending"
	// BackupRunning has a Job moving the data.
	BackupRunning BackupPhase = "Running"
	// BackupCompleted has a complete, checksummed artifact in the store.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed ended without an artifact; nothing that looks complete was left in the store.
	BackupFailed BackupPhase = "Failed"
)

// BackupSpec asks for one backup of one object, taken now. Its source and store cannot change once made;
// verify can be turned on later (a drill of an existing backup), never off.
// +kubebuilder:validation:XValidation:rule="self.source == oldSelf.source && self.store == oldSelf.store",message="spec.source and spec.store cannot change: make a new Backup"
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.verify) && oldSelf.verify) || (has(self.verify) && self.verify)",message="spec.verify cannot be turned off once on: its drill may be running",fieldPath=".verify"
type BackupSpec struct {
	// Source is the object whose data is backed up.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source"
	Source BackupSource `json:"source"`
	// Store is the BackupStore, in the Backup's namespace, the artifact is written to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Store"
	Store string `json:"store"`
	// ArtifactPolicy says what deleting the Backup does to its artifact: Retain (default) leaves it in the
	// store, Delete removes it.
	// +optional
	// +kubebuilder:default=Retain
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Artifact Policy"
	ArtifactPolicy ArtifactPolicy `json:"artifactPolicy,omitempty"`
	// Verify asks for a restore drill once the backup is Completed: the operator checks the artifact's
	// checksum, restores it and checks it against the facts recorded at backup time, reports the result
	// in status.verification, and deletes what it made. A PostgresDatabase's backup is restored into a
	// temporary PostgresDatabase on the source's connection; a SojuBouncer's into one on a temporary
	// PostgresConnection using the bouncer's spec.database.adminSecretName (a bouncer on the operator-wide
	// admin connection cannot be drilled); an ErgoNetwork's datastore is downloaded by a Job and opened with
	// buntdb, its accounts and channels counted, with no temporary object. One drill per Backup. It can be
	// turned on after creation, not off.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Verify",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	Verify bool `json:"verify,omitempty"`
}

// VerificationResult is the outcome of a restore drill.
// +kubebuilder:validation:Enum=Running;Verified;Failed
type VerificationResult string

const (
	// VerificationRunning has a drill in progress.
	VerificationRunning VerificationResult = "Running"
	// VerificationVerified restored the artifact and found what the backup recorded.
	VerificationVerified VerificationResult = "Verified"
	// VerificationFailed could not restore the artifact, or found something else in it.
	VerificationFailed VerificationResult = "Failed"
)

// BackupVerification is the last restore drill of a backup.
type BackupVerification struct {
	// Result is Running, Verified or Failed.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Verification"
	Result VerificationResult `json:"result"`
	// StartTime is when the drill began.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Drill Started"
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the drill ended.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Drill Completed"
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// RecoveryTime is how long the restore into the scratch target took: the measured time to recover.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Recovery Time"
	RecoveryTime *metav1.Duration `json:"recoveryTime,omitempty"`
	// Message says what was checked (tables and rows, accounts and channels) or what differed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Drill Message"
	Message string `json:"message,omitempty"`
}

// BackupStatus reports the backup and its artifact.
type BackupStatus struct {
	// Phase is Pending, Running, Completed or Failed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase"
	Phase BackupPhase `json:"phase,omitempty"`
	// ID is the artifact's id under the source's tree in the store.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ID"
	ID string `json:"id,omitempty"`
	// StartTime is when the data began to move.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Started"
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the artifact was committed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Completed"
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Size is the artifact's size in bytes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Size"
	Size int64 `json:"size,omitempty"`
	// SHA256 is the artifact's checksum, lowercase hex.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="SHA-256"
	SHA256 string `json:"sha256,omitempty"`
	// Location is the artifact's data object: s3://<bucket>/<key>.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Location"
	Location string `json:"location,omitempty"`
	// Format is pg_dump-custom or buntdb.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Format"
	Format string `json:"format,omitempty"`
	// ToolVersion is the version of the tool that produced the data (pg_dump (PostgreSQL) 16.4).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Tool Version"
	ToolVersion string `json:"toolVersion,omitempty"`
	// Verification is the last restore drill; absent means the backup was never restored (unverified).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Drill"
	Verification *BackupVerification `json:"verification,omitempty"`
	// Conditions are Store, Source, Verified and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Backup is one backup of one object's data to a BackupStore, taken when the Backup is made. The program
// that moves the data is the operator's own binary (platform-operator backup put), run by a Job in the
// Backup's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=backup
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.source.kind`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Started",type=date,JSONPath=`.status.startTime`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.verification.result`
// +kubebuilder:printcolumn:name="Checksum",type=string,JSONPath=`.status.sha256`,priority=1
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.status.location`,priority=1
// +operator-sdk:csv:customresourcedefinitions:displayName="Backup",resources={{Job,v1},{PostgresDatabase,v1}}
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the backup asked for.
	Spec BackupSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Backup{}, &BackupList{})
}
