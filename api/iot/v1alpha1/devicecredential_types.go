package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeviceIDPattern is what a device ID may be: one NATS subject token of letters, digits, '-' and '_',
// 1 to 128 characters. It mirrors fleet.ValidDeviceID, and a test runs both on one table of IDs.
const DeviceIDPattern = `^[A-Za-z0-9_-]{1,128}$`

// DeviceCredentialSpec is which device gets credentials from which broker, and with which credential
// labels. Everything but revoked is fixed once the object exists: to rotate, create a new
// DeviceCredential and delete the old one.
// +kubebuilder:validation:XValidation:rule="self.broker == oldSelf.broker && self.deviceID == oldSelf.deviceID",message="broker and deviceID are immutable: create a new DeviceCredential and delete this one"
// +kubebuilder:validation:XValidation:rule="has(self.labels) == has(oldSelf.labels) && (!has(self.labels) || self.labels == oldSelf.labels)",message="labels are immutable: issue a new DeviceCredential with the new labels and delete this one (which revokes the old credentials)"
// +kubebuilder:validation:XValidation:rule="has(self.expiresAfter) == has(oldSelf.expiresAfter) && (!has(self.expiresAfter) || self.expiresAfter == oldSelf.expiresAfter)",message="expiresAfter is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.secretName) == has(oldSelf.secretName) && (!has(self.secretName) || self.secretName == oldSelf.secretName)",message="secretName is immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.revoked) || !oldSelf.revoked || (has(self.revoked) && self.revoked)",message="a revocation cannot be undone: create a new DeviceCredential for the device"
type DeviceCredentialSpec struct {
	// Broker is the name of the FleetBroker, in this namespace, whose authority issues the credentials
	// and whose servers learn of their revocation.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Broker"
	Broker string `json:"broker"`

	// DeviceID is the device's ID, the name of its NATS user: 1-128 letters, digits, '-' or '_' (one
	// NATS subject token). The credentials act as this device only.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]{1,128}$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Device ID"
	DeviceID string `json:"deviceID"`

	// Labels are the device's credential labels, carried in its user JWT: the only labels a namespace
	// policy that names a label key matches (docs/fleet.md, "Credential labels"). Kubernetes label keys
	// and values, at most 64.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$') && size(k.split('/')[size(k.split('/')) - 1]) <= 63 && (size(k.split('/')) == 1 || size(k.split('/')[0]) <= 253))",message="label keys must be qualified names: an optional DNS subdomain prefix of at most 253 characters and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Labels"
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// ExpiresAfter is the credentials' lifetime from their issue (e.g. 8760h); without it they are valid
	// until revoked.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Expires After"
	ExpiresAfter *metav1.Duration `json:"expiresAfter,omitempty"`

	// SecretName names the Secret, in this namespace, that receives the credentials (key device.creds);
	// <metadata.name>-creds by default. The operator creates it and never takes over a Secret of that
	// name it did not make.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret Name"
	SecretName string `json:"secretName,omitempty"`

	// Revoked revokes the credentials now while keeping this object as the record of them (deleting the
	// object revokes them too). Once true it stays true.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Revoked",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	Revoked bool `json:"revoked,omitempty"`
}

// LabelValue is a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting and
// ending with a letter or digit, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// DeviceCredentialStatus is what was issued, and whether it is revoked.
type DeviceCredentialStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// SecretName is the Secret that holds the credentials (key device.creds).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Secret Name",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	SecretName string `json:"secretName,omitempty"`

	// UserKey is the public key of the NATS user the credentials authenticate as: what a revocation
	// names.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="User Key"
	UserKey string `json:"userKey,omitempty"`

	// IssuedAt is when the credentials were issued.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Issued At"
	IssuedAt *metav1.Time `json:"issuedAt,omitempty"`

	// ExpiresAt is when the credentials expire; absent when they are valid until revoked.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Expires At"
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// RevokedAt is when the broker's account revoked the credentials.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Revoked At"
	RevokedAt *metav1.Time `json:"revokedAt,omitempty"`

	// Conditions are Ready (the credentials are in their Secret and valid) and Revoked.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types on a DeviceCredential.
const (
	// ConditionRevoked is True once the broker's account revokes the credentials (spec.revoked, or the
	// object's deletion) and the servers were told.
	ConditionRevoked = "Revoked"
)

// Condition and event reasons of a DeviceCredential. They are part of the API.
const (
	// ReasonIssued is Ready True: the credentials are in their Secret.
	ReasonIssued = "Issued"
	// ReasonBrokerNotFound is Ready False: the named FleetBroker does not exist (or the operator runs
	// without FleetBroker support).
	ReasonBrokerNotFound = "BrokerNotFound"
	// ReasonBrokerNotReady is Ready False while the broker's authority Secret is missing or unreadable;
	// the operator retries.
	ReasonBrokerNotReady = "BrokerNotReady"
	// ReasonSecretMissing is Ready False when the credentials' Secret was deleted after the issue: the
	// operator does not issue a second credential while the first is valid. Delete this object (which
	// revokes them) and create a new one.
	ReasonSecretMissing = "SecretMissing"
	// ReasonCredentialExpired is Ready False once status.expiresAt has passed.
	ReasonCredentialExpired = "Expired"
	// ReasonRevoked is Ready False and Revoked True after the revocation.
	ReasonRevoked = "Revoked"
	// ReasonNotRevoked is Revoked False.
	ReasonNotRevoked = "NotRevoked"
	// ReasonRevocationPending is Revoked False while the revocation could not be written to the
	// authority or pushed to the servers; the operator retries.
	ReasonRevocationPending = "RevocationPending"
	// EventIssued is the Normal event of credentials issued into their Secret.
	EventIssued = "Issued"
	// EventRevoked is the Normal event of a revocation written and pushed to the servers.
	EventRevoked = "Revoked"
	// EventRevocationAbandoned is the Warning event of a deleted DeviceCredential whose revocation
	// could not be done in time (the broker or its servers gone): the finalizer is released anyway.
	EventRevocationAbandoned = "RevocationAbandoned"
)

// DeviceCredential is a device's NATS credentials issued by a FleetBroker's authority into a Secret,
// revoked when the object is deleted (or spec.revoked is set). It is an administrator's action:
// credential labels are the fleet's tenancy boundary, so grant it only to those who provision devices.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=devicecredentials,singular=devicecredential,shortName=devcred,categories=iot
// +kubebuilder:validation:XValidation:rule="has(self.spec.secretName) || size(self.metadata.name) <= 247",message="metadata.name must be at most 247 characters unless spec.secretName is set (the Secret is <name>-creds)"
// +kubebuilder:printcolumn:name="Device",type=string,JSONPath=`.spec.deviceID`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.broker`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.status.secretName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revoked",type=string,JSONPath=`.status.conditions[?(@.type=="Revoked")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Device Credential",resources={{Secret,v1},{Event,v1}}
type DeviceCredential struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the device, its broker and its credential labels.
	// +operator-sdk:csv:customresourcedefinitions:type=spec
	Spec DeviceCredentialSpec `json:"spec"`
	// Status is what was issued and whether it is revoked.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status
	Status DeviceCredentialStatus `json:"status,omitempty"`
}

// SecretNameOrDefault is the Secret that receives the credentials.
func (d *DeviceCredential) SecretNameOrDefault() string {
	if d.Spec.SecretName != "" {
		return d.Spec.SecretName
	}
	return d.Name + "-creds"
}

// DeviceCredentialList is a list of DeviceCredentials.
// +kubebuilder:object:root=true
type DeviceCredentialList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeviceCredential `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeviceCredential{}, &DeviceCredentialList{})
}
