package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErgoNetworkSpec is the IRC network a user asks for.
// +kubebuilder:validation:XValidation:rule="!self.listeners.exists(l, has(l.tls) && l.tls) || has(self.tls)",message="spec.tls is required when a listener has tls: true",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="!has(self.route) || has(self.tls)",message="spec.tls is required when spec.route is set",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="!has(self.route) || self.listeners.exists(l, has(l.tls) && l.tls)",message="spec.route needs a listener with tls: true to pass TLS through to",fieldPath=".route"
// +kubebuilder:validation:XValidation:rule="!has(self.route) || !has(self.route.host) || size(self.route.host) == 0 || !has(self.tls) || (!has(self.tls.dnsNames) || size(self.tls.dnsNames) == 0 ? self.route.host == self.hostname : self.tls.dnsNames.exists(d, d == self.route.host || (d.startsWith('*.') && self.route.host.indexOf('.') > 0 && self.route.host.substring(self.route.host.indexOf('.')) == d.substring(1))))",message="spec.route.host must be covered by the certificate: equal to one of spec.tls.dnsNames or match a one-label wildcard among them (*.example.com covers irc.example.com, not a.b.example.com), or equal spec.hostname when spec.tls.dnsNames is empty",fieldPath=".route.host"
// +kubebuilder:validation:XValidation:rule="has(self.restore) == has(oldSelf.restore)",message="spec.restore is set only at creation: it cannot be added or removed",fieldPath=".restore"
type ErgoNetworkSpec struct {
	// Hostname is the server's DNS name: ergo's server name, the default certificate DNS name and the
	// default network name. Ergo refuses server names without a dot, so it needs at least two labels.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+$')",message="hostname must be a lowercase DNS name with at least one dot, such as irc.example.com"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hostname"
	Hostname string `json:"hostname"`

	// NetworkName is the IRC network's name as clients show it (ISUPPORT NETWORK). It defaults to the
	// hostname. IRC sends it as one token, so it cannot hold spaces.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Name"
	NetworkName string `json:"networkName,omitempty"`

	// OperCredentials names the Secret holding the bcrypt hash of the IRC operator "admin" password.
	// Without it the network has no operator.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Oper Credentials"
	OperCredentials *OperCredentials `json:"operCredentials,omitempty"`

	// Listeners are the addresses ergo accepts clients on; each becomes a port of the network's Service.
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

	// Storage is the volume that holds ergo's datastore (accounts, channels, history).
	// +optional
	// +kubebuilder:default={}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage"
	Storage StorageSpec `json:"storage,omitempty"`

	// Resources are the compute resources of the ergo container.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors="urn:alm:descriptor:com.tectonic.ui:resourceRequirements"
	Resources *ResourceRequirements `json:"resources,omitempty"`

	// Restore starts the new network from a backup of an ErgoNetwork of this namespace: a Backup
	// (Completed, of kind ErgoNetwork), or a BackupStore with the source's name and the artifact's id.
	// The claim is made, the backup's ircd.db is written into it by a Job, and only then does ergo start
	// on it. A restore never writes into a claim that already holds a datastore. It is set only at
	// creation and cannot change. A failed restore is not retried: delete the ErgoNetwork (and its claim,
	// with storage.reclaimPolicy Delete) and create it again.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.restore cannot change"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore"
	Restore *RestoreSource `json:"restore,omitempty"`
}

// OperCredentials points at the user's Secret with the operator password hash. The operator reads it and
// never changes or owns it.
type OperCredentials struct {
	// SecretName is the name of a Secret in the network's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret Name",xDescriptors="urn:alm:descriptor:io.kubernetes:Secret"
	SecretName string `json:"secretName"`

	// Key is the Secret key holding the bcrypt hash, as `ergo genpasswd` prints it.
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Key"
	Key string `json:"key,omitempty"`
}

// Listener is one address ergo listens on.
type Listener struct {
	// Address is where ergo listens: ":port", "0.0.0.0:port" or "[::]:port" (":6697", "0.0.0.0:6667",
	// "[::]:6697"), port 1024-65535 without leading zeros. Ergo runs in a pod and must listen on all of the
	// pod's addresses for the Service to reach it, so no other host is accepted. Ports below 1024 are
	// refused: the pod runs as non-root without capabilities, so it could not bind them.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0\\\\.0\\\\.0\\\\.0|\\\\[::\\\\])?:[0-9]+$')",message="address must be :port, 0.0.0.0:port or [::]:port, such as :6697: ergo runs in a pod and must listen on all of its addresses for the Service to reach it"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^.*:[0-9]+$') || (self.substring(self.lastIndexOf(':') + 1).matches('^[1-9][0-9]{0,4}$') && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535)",message="port must be a number between 1 and 65535 without leading zeros"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^.*:[0-9]+$') || !self.substring(self.lastIndexOf(':') + 1).matches('^[1-9][0-9]{0,4}$') || int(self.substring(self.lastIndexOf(':') + 1)) >= 1024",message="ports below 1024 need the NET_BIND_SERVICE capability, which the pod does not have (it runs as non-root with all capabilities dropped): listen on 1024 or above, such as :6697, and expose 443 or 6697 outside through the Route or a Service of your own"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Address"
	Address string `json:"address"`

	// TLS makes the listener serve TLS with the certificate from spec.tls.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	TLS bool `json:"tls,omitempty"`
}

// TLSSpec is the cert-manager Certificate the operator requests for the network.
type TLSSpec struct {
	// IssuerRef is the cert-manager Issuer or ClusterIssuer that signs the certificate.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer"
	IssuerRef IssuerRef `json:"issuerRef"`

	// DNSNames are the certificate's DNS names; they default to the hostname.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DNS Names"
	DNSNames []string `json:"dnsNames,omitempty"`
}

// IssuerRef names a cert-manager issuer.
type IssuerRef struct {
	// Name is the issuer's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// Kind is Issuer (in the network's namespace) or ClusterIssuer.
	// +optional
	// +kubebuilder:default=Issuer
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:validation:MaxLength=13
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind"
	Kind string `json:"kind,omitempty"`
}

// RouteSpec is the OpenShift Route in front of the network.
type RouteSpec struct {
	// Host is the Route's host name; OpenShift picks one when it is empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+$')",message="route host must be a lowercase DNS name with at least one dot"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Host"
	Host string `json:"host,omitempty"`
}

// StorageSpec is the PersistentVolumeClaim that holds ergo's datastore.
type StorageSpec struct {
	// Size is the claim's requested size. It can grow (when the storage class allows expansion) but
	// never shrink.
	// +optional
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage size must be positive"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Size"
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName is the claim's storage class; the cluster default when empty. It is fixed once
	// the claim exists.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Class",xDescriptors="urn:alm:descriptor:io.kubernetes:StorageClass"
	StorageClassName string `json:"storageClassName,omitempty"`

	// ReclaimPolicy says what happens to the claim, and so to the network's accounts and channel
	// registrations (ircd.db), when the network is deleted. Delete: the claim goes with the network.
	// Retain: the claim is kept (labelled with the network's name), and a new network of the same name in
	// the same namespace starts ergo on it again. Changing it on a live network takes effect at once.
	// +optional
	// +kubebuilder:default=Delete
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Reclaim Policy"
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// AutoUpgrade lets a newer ergo image upgrade the datastore's schema when it starts (ergo backs the
	// database up first; datastore.autoupgrade). Off by default: an image whose schema is newer than the
	// datastore's then refuses to start, so a schema change happens only when you ask for it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Auto Upgrade Schema",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	AutoUpgrade bool `json:"autoUpgrade,omitempty"`
}

// ReclaimPolicy is what becomes of a network's claim when the network is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type ReclaimPolicy string

const (
	// ReclaimDelete deletes the claim with the network (through its owner reference).
	ReclaimDelete ReclaimPolicy = "Delete"
	// ReclaimRetain keeps the claim when the network is deleted: it carries no owner reference.
	ReclaimRetain ReclaimPolicy = "Retain"
)

// ResourceRequirements are the ergo container's requests and limits.
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || self.requests.all(k, !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="resource requests must not exceed limits"
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || self.requests.all(k, !(k.startsWith('hugepages-') || k.contains('/')) || (has(self.limits) && k in self.limits && quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) == 0))",message="hugepages and extended resources cannot be overcommitted: each request needs a limit of the same quantity"
// +kubebuilder:validation:XValidation:rule="!((has(self.requests) && self.requests.exists(k, k.startsWith('hugepages-'))) || (has(self.limits) && self.limits.exists(k, k.startsWith('hugepages-')))) || (has(self.requests) && ('cpu' in self.requests || 'memory' in self.requests)) || (has(self.limits) && ('cpu' in self.limits || 'memory' in self.limits))",message="hugepages need a cpu or memory request or limit"
type ResourceRequirements struct {
	// Requests are the minimum resources, such as cpu: 50m and memory: 64Mi.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'] || (k.startsWith('hugepages-') && isQuantity(k.substring(10))) || (k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 244 && !k.contains('kubernetes.io/')))",message="resource names are cpu, memory, ephemeral-storage, hugepages-<size> or a domain-qualified extended resource (example.com/gpu) outside kubernetes.io"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="resource quantities must not be negative"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Requests",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	Requests map[corev1.ResourceName]resource.Quantity `json:"requests,omitempty"`

	// Limits are the maximum resources, such as cpu: 200m and memory: 256Mi.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'] || (k.startsWith('hugepages-') && isQuantity(k.substring(10))) || (k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 244 && !k.contains('kubernetes.io/')))",message="resource names are cpu, memory, ephemeral-storage, hugepages-<size> or a domain-qualified extended resource (example.com/gpu) outside kubernetes.io"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="resource quantities must not be negative"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Limits",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	Limits map[corev1.ResourceName]resource.Quantity `json:"limits,omitempty"`
}

// ListenerStatus is a port clients connect to.
type ListenerStatus struct {
	// Name is the Service port's name.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Port Name"
	Name string `json:"name"`
	// Port is the Service port number.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Port"
	Port int32 `json:"port"`
	// TLS tells whether the port speaks TLS.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="TLS"
	TLS bool `json:"tls"`
}

// ErgoNetworkStatus is what the operator observed of the network.
type ErgoNetworkStatus struct {
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

	// NetworkName is the network name ergo announces (spec.networkName or the hostname).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Network Name"
	NetworkName string `json:"networkName,omitempty"`

	// ServiceHost is the in-cluster DNS name of the network's Service.
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

	// RouteHost is the host of the network's Route, once OpenShift admitted it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Route Host"
	RouteHost string `json:"routeHost,omitempty"`

	// RestoredFrom is the backup the network was restored from (spec.restore), once restored.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored From"
	RestoredFrom *RestoredFrom `json:"restoredFrom,omitempty"`

	// LastBackupTime is when the newest Completed Backup (backup.josie.cloud) of this ErgoNetwork, in its
	// namespace, was committed: that Backup's status.completionTime. Empty while there is none, or when the
	// cluster does not serve the backup API.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup Time"
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`

	// LastBackup is the name of that Backup, in the ErgoNetwork's namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup"
	LastBackup string `json:"lastBackup,omitempty"`
}

// ErgoNetwork is an IRC network run by the ergo server: its config, storage, certificate, Service and
// Route.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ergo;ergonet,categories=irc
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",message="metadata.name must start with a letter and be at most 63 lowercase letters, digits and '-': it names the network's Service"
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.spec.hostname`
// +kubebuilder:printcolumn:name="Network",type=string,JSONPath=`.status.networkName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="Ergo IRC Network",resources={{Deployment,v1},{ConfigMap,v1},{Service,v1},{PersistentVolumeClaim,v1},{Certificate,v1},{Route,v1}}
type ErgoNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the network the user asks for.
	Spec ErgoNetworkSpec `json:"spec"`
	// Status is what the operator observed.
	// +optional
	Status ErgoNetworkStatus `json:"status,omitempty"`
}

// ErgoNetworkList is a list of ErgoNetworks.
// +kubebuilder:object:root=true
type ErgoNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ErgoNetwork `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ErgoNetwork{}, &ErgoNetworkList{})
}
