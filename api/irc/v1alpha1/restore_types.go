package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RestoreSource and RestoredFrom have the same shape in every API group whose kinds restore (and in
// backup.josie.cloud, where the operator's backup kit reads them): an API group imports no other group, so
// each states them itself; the controllers convert between them (same fields, same order).

// RestoreSource names the backup a new SojuBouncer or ErgoNetwork starts from: a Backup of this namespace, or an artifact in
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
