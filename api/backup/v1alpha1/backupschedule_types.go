package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupRetention prunes a schedule's old backups: an artifact goes when either rule says so, but the
// newest Completed backup is always kept, and never one a restore or drill is reading.
// +kubebuilder:validation:XValidation:rule="has(self.keepLast) || has(self.maxAge)",message="retention needs keepLast, maxAge or both"
type BackupRetention struct {
	// KeepLast keeps the newest N Completed backups.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Keep Last",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	KeepLast *int32 `json:"keepLast,omitempty"`
	// MaxAge keeps Completed backups younger than this (a Go duration, 720h for 30 days).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Age"
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// BackupScheduleSpec asks for backups of one object on a cron schedule.
// +kubebuilder:validation:XValidation:rule="self.source == oldSelf.source",message="spec.source cannot change: make a new BackupSchedule"
type BackupScheduleSpec struct {
	// Source is the object whose data is backed up.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source"
	Source BackupSource `json:"source"`
	// Store is the BackupStore, in the schedule's namespace, the artifacts are written to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Store"
	Store string `json:"store"`
	// Schedule is a five-field cron expression in UTC ("0 3 * * *" is 03:00 every day), or a descriptor
	// such as @daily or @every 6h.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Schedule"
	Schedule string `json:"schedule"`
	// Suspend stops new backups; the existing ones stay and retention still prunes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Suspend",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	Suspend bool `json:"suspend,omitempty"`
	// Retention prunes old backups and their artifacts; nothing is pruned when absent.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Retention"
	Retention *BackupRetention `json:"retention,omitempty"`
	// Verify is copied into each Backup the schedule makes from then on: each is proven restorable by a
	// restore drill once Completed (see Backup's spec.verify), of every source kind.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Verify",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	Verify bool `json:"verify,omitempty"`
}

// BackupScheduleStatus reports the schedule's backups.
type BackupScheduleStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastScheduleTime is when the schedule last made a Backup.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Schedule"
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSuccessfulBackup names the newest Completed Backup the schedule made.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful Backup"
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`
	// LastSuccessTime is when LastSuccessfulBackup completed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Success"
	LastSuccessTime *metav1.Time `json:"lastSuccessTime,omitempty"`
	// LastVerification is the result of the newest drill (Verified or Failed).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Verification"
	LastVerification VerificationResult `json:"lastVerification,omitempty"`
	// Conditions are Store, Source and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BackupSchedule makes a Backup of one object on a cron schedule, prunes old ones by retention, and can
// prove each restorable with a drill.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=backup
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.source.kind`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessTime`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.lastVerification`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +operator-sdk:csv:customresourcedefinitions:displayName="Backup Schedule",resources={{Backup,v1alpha1}}
type BackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the schedule asked for.
	Spec BackupScheduleSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status BackupScheduleStatus `json:"status,omitempty"`
}

// BackupScheduleList is a list of BackupSchedules.
// +kubebuilder:object:root=true
type BackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupSchedule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BackupSchedule{}, &BackupScheduleList{})
}
