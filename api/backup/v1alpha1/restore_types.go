package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionRestored is set on an object created with spec.restore (a PostgresDatabase, a SojuBouncer or an
// ErgoNetwork): True once the backup is restored into its new, empty data; until then the workload does not
// get the data and the object is not Ready.
const ConditionRestored = "Restored"

// Reasons of the Restored condition, the same on every kind that restores (docs/backup.md, "Restores"),
// with ReasonRestored (conditions.go): the backup restored, the data handed to the workload.
const (
	// ReasonRestoring is the restore Job running, or about to be created.
	ReasonRestoring = "Restoring"
	// ReasonRestoreFailed is the restore Job failed; its message is the program's last words. Nothing is
	// retried: delete the object and create it again.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonBackupNotFound is spec.restore's Backup or BackupStore missing from the namespace, or an
	// artifact with no manifest in the store.
	ReasonBackupNotFound = "BackupNotFound"
	// ReasonBackupNotCompleted is a Backup that is not (yet) Completed: the restore waits for it.
	ReasonBackupNotCompleted = "BackupNotCompleted"
	// ReasonWrongKind is a Backup (or an artifact) of another kind than the object restoring it.
	ReasonWrongKind = "WrongKind"
	// ReasonOperatorImageUnknown is an operator that does not know its own image (RELATED_IMAGE_OPERATOR
	// unset), which the restore Job runs: the restore waits.
	ReasonOperatorImageUnknown = "OperatorImageUnknown"
	// ReasonTargetNotEmpty is a target that already holds data (a database with tables kept by reclaimPolicy
	// Retain, a claim with a datastore): a restore never writes into it.
	ReasonTargetNotEmpty = "TargetNotEmpty"
	// ReasonSchemaTooNew is a backup written by a newer version of the workload than the one that would
	// run on it (soju refuses a newer database schema): nothing is restored.
	ReasonSchemaTooNew = "SchemaTooNew"
)

// RestoreSource names the backup a new object starts from: a Backup of this namespace, or an artifact in
// a BackupStore of this namespace (the store, the source object's name and the artifact's id) for an
// artifact whose Backup object is gone. Only the object's own namespace's backups can be restored: a
// namespace reads only under its own prefix of a store, and the names are names (no "namespace/name":
// the pattern refuses a slash).
// +kubebuilder:validation:XValidation:rule="has(self.backup) != has(self.store)",message="restore needs either backup, or store with sourceName and id"
// +kubebuilder:validation:XValidation:rule="has(self.store) == has(self.id) && has(self.store) == has(self.sourceName)",message="store, sourceName and id go together"
type RestoreSource struct {
	// Backup is a Completed Backup in the object's namespace, of the same kind as the object.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore Backup"
	Backup string `json:"backup,omitempty"`
	// Store is a BackupStore in the object's namespace holding the artifact.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore Store"
	Store string `json:"store,omitempty"`
	// SourceName is the name of the object the artifact was taken from (of the same kind).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore Source"
	SourceName string `json:"sourceName,omitempty"`
	// ID is the artifact's id (a Backup's status.id).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore ID"
	ID string `json:"id,omitempty"`
}

// RestoredFrom records the backup an object was restored from.
type RestoredFrom struct {
	// Backup is the Backup restored, when spec.restore named one.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored Backup"
	Backup string `json:"backup,omitempty"`
	// Store is the BackupStore the artifact was read from.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored Store"
	Store string `json:"store"`
	// SourceName is the object the backup was taken of.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored Source"
	SourceName string `json:"sourceName"`
	// ID is the artifact's id.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored ID"
	ID string `json:"id"`
	// Time is when the restore succeeded (its Job completed).
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored At"
	Time metav1.Time `json:"time"`
}
