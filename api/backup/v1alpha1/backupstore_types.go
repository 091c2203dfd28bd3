package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EncryptionMode is the server-side encryption the store is asked for on every write.
// +kubebuilder:validation:Enum=SSE-S3;SSE-KMS
type EncryptionMode string

const (
	// EncryptionSSES3 asks for the store's own keys (x-amz-server-side-encryption: AES256).
	EncryptionSSES3 EncryptionMode = "SSE-S3"
	// EncryptionSSEKMS asks for a key of the store's key service (aws:kms and the key id).
	EncryptionSSEKMS EncryptionMode = "SSE-KMS"
)

// BackupStoreCredentials names the Secret, in the BackupStore's namespace, that holds the access key.
type BackupStoreCredentials struct {
	// SecretName is the Secret in the BackupStore's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials Secret",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	SecretName string `json:"secretName"`
	// AccessKeyIDKey is the Secret's key holding the access key id.
	// +optional
	// +kubebuilder:default=AWS_ACCESS_KEY_ID
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Access Key ID Key"
	AccessKeyIDKey string `json:"accessKeyIDKey,omitempty"`
	// SecretAccessKeyKey is the Secret's key holding the secret access key.
	// +optional
	// +kubebuilder:default=AWS_SECRET_ACCESS_KEY
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret Access Key Key"
	SecretAccessKeyKey string `json:"secretAccessKeyKey,omitempty"`
}

// BackupStoreCA names a ConfigMap key in the BackupStore's namespace holding PEM certificates.
type BackupStoreCA struct {
	// ConfigMapName is the ConfigMap in the BackupStore's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CA ConfigMap"
	ConfigMapName string `json:"configMapName"`
	// Key is the ConfigMap's key holding the PEM bundle.
	// +optional
	// +kubebuilder:default=ca.crt
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CA Key"
	Key string `json:"key,omitempty"`
}

// BackupStoreEncryption is the server-side encryption asked for on every write.
// +kubebuilder:validation:XValidation:rule="self.mode == 'SSE-KMS' || !has(self.kmsKeyID)",message="kmsKeyID is only for mode SSE-KMS"
type BackupStoreEncryption struct {
	// Mode is SSE-S3 (the store's keys) or SSE-KMS (a key of the store's key service).
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Encryption Mode"
	Mode EncryptionMode `json:"mode"`
	// KMSKeyID is the key for SSE-KMS; the store's default key when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="KMS Key ID"
	KMSKeyID string `json:"kmsKeyID,omitempty"`
}

// BackupStoreSpec describes an S3-compatible object store (AWS S3, Ceph RGW, SeaweedFS, Garage, MinIO...).
// Backups of the namespace's objects are written under <prefix>/<namespace>/<kind>/<name>/<id>/.
type BackupStoreSpec struct {
	// Endpoint is the store's URL, scheme://host[:port] and nothing else; https unless it says http://.
	// Credentials in the URL are refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="!self.contains('@')",message="endpoint must not hold credentials; name a Secret in spec.credentials"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Endpoint"
	Endpoint string `json:"endpoint"`
	// Bucket is the bucket, which must exist: the operator never creates buckets.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Bucket"
	Bucket string `json:"bucket"`
	// Prefix is the path inside the bucket under which the namespace's tree (<prefix>/<namespace>/) lies;
	// the bucket's root when empty. No leading or trailing slash.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9][A-Za-z0-9._-]*)(/[A-Za-z0-9][A-Za-z0-9._-]*)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Prefix"
	Prefix string `json:"prefix,omitempty"`
	// Region is the region the requests are signed for; the store is asked when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Region"
	Region string `json:"region,omitempty"`
	// Credentials name the Secret holding the access key.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials"
	Credentials BackupStoreCredentials `json:"credentials"`
	// CABundle names PEM certificates the store's certificate must chain to, instead of the system's roots.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CA Bundle"
	CABundle *BackupStoreCA `json:"caBundle,omitempty"`
	// Encryption asks the store to encrypt every object it writes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Encryption"
	Encryption *BackupStoreEncryption `json:"encryption,omitempty"`
}

// BackupStoreStatus is what the operator found when it reached the store.
type BackupStoreStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions hold Ready: the store answered with the credentials and bucket given, and the prefix is
	// the namespace's own.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Location is where this namespace's backups go: s3://<bucket>/<prefix>/<namespace>/.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Location"
	Location string `json:"location,omitempty"`
}

// BackupStore is an S3-compatible object store that the namespace's Backups and BackupSchedules write
// to. The operator checks it can reach it and that its bucket and prefix are the namespace's own.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=backup
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.status.location`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Backup Store",resources={{Secret,v1},{ConfigMap,v1}}
type BackupStore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec describes the store.
	Spec BackupStoreSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status BackupStoreStatus `json:"status,omitempty"`
}

// BackupStoreList is a list of BackupStores.
// +kubebuilder:object:root=true
type BackupStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupStore `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BackupStore{}, &BackupStoreList{})
}
