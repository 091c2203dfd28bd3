package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DeploymentSpec is which containers run on which devices of the fleet, and how a change rolls out.
type DeploymentSpec struct {
	// TargetSelector selects the devices, by the labels each device's agent registers, that run this
	// deployment. An empty selector selects every device of the fleet.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Target Selector"
	TargetSelector metav1.LabelSelector `json:"targetSelector"`

	// Score is what the agent runs on each selected device.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Score"
	Score Score `json:"score"`

	// Rollout is how a new score reaches the selected devices: all at once, or batch by batch.
	// +optional
	// +kubebuilder:default={strategy: Immediate}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Rollout"
	Rollout Rollout `json:"rollout,omitempty"`

	// Paused stops publishing desired state: devices keep what they were last given, and status keeps
	// being folded from what they report.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Paused",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	Paused bool `json:"paused,omitempty"`
}

// ScoreType names the payload a score carries, and so which runtime the agent drives.
// +kubebuilder:validation:Enum=PodmanV0
type ScoreType string

const (
	// ScorePodmanV0 is a set of containers the agent runs with podman.
	ScorePodmanV0 ScoreType = "PodmanV0"
)

// Score is the typed payload the agent reconciles: its type, and the one payload of that type.
// +kubebuilder:validation:XValidation:rule="self.type != 'PodmanV0' || has(self.podmanV0)",message="score.podmanV0 is required when score.type is PodmanV0",fieldPath=".podmanV0"
type Score struct {
	// Type says which payload the score carries.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Type"
	Type ScoreType `json:"type"`

	// PodmanV0 is the set of containers the agent runs with podman.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Podman v0"
	PodmanV0 *PodmanV0Score `json:"podmanV0,omitempty"`
}

// PodmanV0Score is the containers one device runs for a deployment.
// +kubebuilder:validation:XValidation:rule="self.services.all(s, self.services.exists_one(t, t.name == s.name))",message="service names must be unique",fieldPath=".services"
type PodmanV0Score struct {
	// Services are the containers, each run as one podman container named after the deployment and the
	// service.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Services"
	Services []Service `json:"services"`
}

// RestartPolicy is podman's --restart policy for a service's container.
// +kubebuilder:validation:Enum=Always;OnFailure;Never
type RestartPolicy string

const (
	// RestartAlways restarts the container whenever it exits (podman --restart=always).
	RestartAlways RestartPolicy = "Always"
	// RestartOnFailure restarts the container when it exits non-zero (podman --restart=on-failure).
	RestartOnFailure RestartPolicy = "OnFailure"
	// RestartNever leaves an exited container stopped (podman --restart=no).
	RestartNever RestartPolicy = "Never"
)

// Service is one container of a podman score.
type Service struct {
	// Name names the container on the device (with the deployment's namespace and name); a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// Image is the container image reference; the agent pulls it only when the device does not have it
	// (IfNotPresent), so a changing tag such as latest does not move by itself.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('\\\\s')",message="image must not contain whitespace"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image"
	Image string `json:"image"`

	// Ports are published from the device to the container.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ports"
	Ports []Port `json:"ports,omitempty"`

	// Env is the container's environment.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, f.name == e.name))",message="environment variable names must be unique"
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Environment"
	Env []EnvVar `json:"env,omitempty"`

	// RestartPolicy says whether podman restarts the container when it exits.
	// +optional
	// +kubebuilder:default=Always
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restart Policy"
	RestartPolicy RestartPolicy `json:"restartPolicy,omitempty"`
}

// Protocol is a published port's protocol.
// +kubebuilder:validation:Enum=TCP;UDP
type Protocol string

const (
	// ProtocolTCP is the default protocol of a published port.
	ProtocolTCP Protocol = "TCP"
	// ProtocolUDP publishes a UDP port.
	ProtocolUDP Protocol = "UDP"
)

// Port publishes one container port on the device.
type Port struct {
	// ContainerPort is the port the container listens on.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Container Port"
	ContainerPort int32 `json:"containerPort"`

	// HostPort is the device's port; it defaults to the container port.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Host Port"
	HostPort int32 `json:"hostPort,omitempty"`

	// Protocol is TCP or UDP.
	// +optional
	// +kubebuilder:default=TCP
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Protocol"
	Protocol Protocol `json:"protocol,omitempty"`
}

// EnvVar is one environment variable of a container.
type EnvVar struct {
	// Name is the variable's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name"
	Name string `json:"name"`

	// Value is the variable's value. It travels in clear text to the devices; do not put secrets here.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Value"
	Value string `json:"value,omitempty"`
}

// RolloutStrategy is how a new score reaches the selected devices.
// +kubebuilder:validation:Enum=Immediate;Batched
type RolloutStrategy string

const (
	// RolloutImmediate publishes the new score to every selected device at once.
	RolloutImmediate RolloutStrategy = "Immediate"
	// RolloutBatched publishes the new score to one batch of devices at a time, the next batch once
	// enough of the earlier ones succeeded.
	RolloutBatched RolloutStrategy = "Batched"
)

// Rollout is how a new score reaches the selected devices.
// +kubebuilder:validation:XValidation:rule="self.strategy != 'Batched' || has(self.batched)",message="rollout.batched is required when rollout.strategy is Batched",fieldPath=".batched"
// +kubebuilder:validation:XValidation:rule="self.strategy == 'Batched' || !has(self.batched)",message="rollout.batched is only allowed when rollout.strategy is Batched",fieldPath=".batched"
type Rollout struct {
	// Strategy is Immediate (every device at once) or Batched.
	// +optional
	// +kubebuilder:default=Immediate
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Strategy"
	Strategy RolloutStrategy `json:"strategy,omitempty"`

	// Batched are the batches of a Batched rollout.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Batched"
	Batched *BatchedRollout `json:"batched,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may go without a device reaching the new score
	// before Progressing turns False with reason ProgressDeadlineExceeded; onFailure says what happens
	// then.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Progress Deadline Seconds"
	ProgressDeadlineSeconds int32 `json:"progressDeadlineSeconds,omitempty"`

	// OnFailure is what the operator does when the rollout fails (more devices failed than
	// batched.maxUnavailable allows, or progressDeadlineSeconds passed): Pause gives no further device
	// the new score and leaves the devices given it as they are; Rollback gives those devices the
	// previous successful score again (status.rolledBackTo) and does not publish the failed score again
	// until the spec changes.
	// +optional
	// +kubebuilder:default=Pause
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="On Failure"
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`

	// RevisionHistoryLimit is how many successful scores (generations whose rollout completed) the
	// operator keeps as ControllerRevisions, the newest ones, for a rollback to return to.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Revision History Limit"
	RevisionHistoryLimit int32 `json:"revisionHistoryLimit,omitempty"`
}

// RolloutFailurePolicy is what a failed rollout does: pause, or give the devices back the previous
// successful score.
// +kubebuilder:validation:Enum=Pause;Rollback
type RolloutFailurePolicy string

const (
	// RolloutFailurePause stops the rollout where it failed (no further device is given the new score).
	RolloutFailurePause RolloutFailurePolicy = "Pause"
	// RolloutFailureRollback gives the devices that received the failed score the previous successful
	// score again.
	RolloutFailureRollback RolloutFailurePolicy = "Rollback"
)

// BatchedRollout are the batches of a Batched rollout.
type BatchedRollout struct {
	// BatchSize is how many devices each batch adds: a count (10) or a percentage of the selected
	// devices ("10%", rounded up, at least one device).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="batchSize must be a count of at least 1 or a percentage from 1% to 100%"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Batch Size"
	BatchSize intstr.IntOrString `json:"batchSize"`

	// SuccessThreshold is the percentage of the devices given the new score so far that must run it
	// before the next batch is given it.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Success Threshold"
	SuccessThreshold int32 `json:"successThreshold,omitempty"`

	// MaxUnavailable is how many devices given the new score may fail it before the rollout stops
	// adding batches: a count or a percentage of the selected devices ("5%", rounded down). Zero stops
	// at the first failure.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^([0-9]|[1-9][0-9]|100)%$')",message="maxUnavailable must be a count of at least 0 or a percentage from 0% to 100%"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Max Unavailable"
	MaxUnavailable intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// DeploymentStatus is what the operator published and what the fleet reports.
type DeploymentStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Aggregate is the fleet's state for this deployment, folded from per-state counters.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Aggregate"
	Aggregate Aggregate `json:"aggregate,omitempty"`

	// PublishedDevices is how many selected devices were given the current score so far (all of them
	// once a rollout is through all its batches).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Published Devices"
	PublishedDevices int32 `json:"publishedDevices,omitempty"`

	// LastProgressTime is when the rollout of the current generation last moved: the generation was first
	// seen, a device was given it, or one more device ran it. progressDeadlineSeconds counts from here.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Progress Time"
	LastProgressTime *metav1.Time `json:"lastProgressTime,omitempty"`

	// RecentEvents are the newest fleet events of this deployment (device failures and recoveries),
	// newest first, at most ten.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Recent Events"
	RecentEvents []FleetEvent `json:"recentEvents,omitempty"`

	// RolledBackTo is the last rollback: the generation whose score the devices that received a failed
	// generation were given back, and that failed generation. Kept after the spec changes, as a record.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Rolled Back To"
	RolledBackTo *RollbackStatus `json:"rolledBackTo,omitempty"`

	// Conditions are Progressing, Available, Paused and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RollbackStatus is one rollback of a failed generation to the previous successful one.
type RollbackStatus struct {
	// Generation is the previous successful generation whose score the devices were given back.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Generation"
	Generation int64 `json:"generation"`
	// FailedGeneration is the generation that failed and was taken back from the devices; it is not
	// published again.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Failed Generation"
	FailedGeneration int64 `json:"failedGeneration"`
	// Reason is why the failed generation was rolled back: TooManyFailures or ProgressDeadlineExceeded.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Reason"
	Reason string `json:"reason"`
	// StartTime is when the rollback began.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Start Time"
	StartTime metav1.Time `json:"startTime"`
}

// Aggregate counts the selected devices by the state they report for this deployment's current
// generation. The counts come from counters moved by each device's state, registration and heartbeat
// records, not from reading every device (docs/fleet.md).
type Aggregate struct {
	// MatchedDevices is how many registered devices the target selector selects.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Matched Devices"
	MatchedDevices int32 `json:"matchedDevices"`
	// Succeeded is how many devices run the current score.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Succeeded"
	Succeeded int32 `json:"succeeded"`
	// Failed is how many devices failed to run the current score.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Failed"
	Failed int32 `json:"failed"`
	// Pending is how many selected devices neither run nor failed the current score yet.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pending"
	Pending int32 `json:"pending"`
	// Updated is how many devices report the current generation, whatever their phase.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Updated"
	Updated int32 `json:"updated"`
	// Stale is how many selected devices stopped sending heartbeats: their heartbeat lapsed (the
	// heartbeat TTL passed without one), and they have not sent one since.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Stale"
	Stale int32 `json:"stale"`
	// LastError is the most recent failure a device reported for this deployment.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Error"
	LastError *DeviceError `json:"lastError,omitempty"`
	// OldestHeartbeatAt is the last heartbeat of the selected device silent the longest, rounded down to
	// the minute (to a coarser step of a power of two minutes when the stale devices of the selection went
	// silent in more than 1024 distinct steps). It is set only while a selected device is stale; absent,
	// every selected device heartbeated within the heartbeat TTL. Also absent while the operator does not
	// know the last heartbeat of one of the stale devices (a lapse recorded by an older operator, or an
	// agent that did not carry it back) until the index counts the devices again.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Oldest Heartbeat At"
	OldestHeartbeatAt *metav1.Time `json:"oldestHeartbeatAt,omitempty"`
	// NewestHeartbeatAt is the last heartbeat of the selected device that went silent last, rounded down
	// like oldestHeartbeatAt, and set only when every selected device is stale: when the whole selection
	// went silent. While a selected device is live it is absent: that device heartbeated within the
	// heartbeat TTL, and a figure that moved with its heartbeats would be a status write per heartbeat.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Newest Heartbeat At"
	NewestHeartbeatAt *metav1.Time `json:"newestHeartbeatAt,omitempty"`
}

// DeviceError is one device's failure.
type DeviceError struct {
	// DeviceID is the device's ID (the reference's lastError.deviceId).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Device ID"
	DeviceID string `json:"deviceId,omitempty"`
	// Device is the device's ID, the same as deviceId. Deprecated: read deviceId; device stays in this
	// release and the next, and is removed in the release after next.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Device (deprecated)"
	Device string `json:"device"`
	// Message is what the agent reported.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Message"
	Message string `json:"message"`
	// At is when the agent reported it.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="At"
	At metav1.Time `json:"at"`
}

// EventSeverity ranks a fleet event, as the reference's agent events did.
// +kubebuilder:validation:Enum=Info;Warn;Error
type EventSeverity string

const (
	// SeverityInfo is a device that recovered: Running after Failed.
	SeverityInfo EventSeverity = "Info"
	// SeverityWarn is a device that failed a generation other than the one the status describes (a
	// superseded one, or one the status has not caught up with).
	SeverityWarn EventSeverity = "Warn"
	// SeverityError is a device that failed the generation the status describes.
	SeverityError EventSeverity = "Error"
)

// FleetEvent is one device's notable state change.
type FleetEvent struct {
	// At is when the device reported it.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="At"
	At metav1.Time `json:"at"`
	// Severity ranks the event: Error for a failure of the generation the status describes, Warn for a
	// failure of another generation, Info for a recovery.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Severity"
	Severity EventSeverity `json:"severity,omitempty"`
	// Deployment is the name of the Deployment the event is about (this one), as the reference's
	// events carried it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Deployment"
	Deployment string `json:"deployment,omitempty"`
	// Device is the device's ID.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Device"
	Device string `json:"device"`
	// Phase is the phase the device entered.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase"
	Phase string `json:"phase"`
	// Message is the agent's message, if any.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Message"
	Message string `json:"message,omitempty"`
}

// Deployment runs containers on the devices of a fleet selected by label. The operator publishes each
// selected device's desired state to NATS JetStream, the agent on the device runs it with podman and
// reports back, and the operator folds the reports into status. The resource is deployments (short name
// iotdeploy): kubectl resolves a bare "deployments" to apps/v1 (built-in groups come first in discovery),
// so use deployments.iot.nationtech.io or iotdeploy.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=deployments,singular=deployment,shortName=iotdeploy,categories=iot
// +kubebuilder:validation:XValidation:rule="!self.metadata.name.contains('.')",message="metadata.name must not contain dots: it is a token of NATS subjects and keys, where a dot separates tokens"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters"
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.aggregate.matchedDevices`
// +kubebuilder:printcolumn:name="Succeeded",type=integer,JSONPath=`.status.aggregate.succeeded`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.aggregate.failed`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.aggregate.pending`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="IoT Deployment",resources={{Event,v1}}
type Deployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the containers and the devices that run them.
	Spec DeploymentSpec `json:"spec"`
	// Status is what the operator published and what the fleet reports.
	// +optional
	Status DeploymentStatus `json:"status,omitempty"`
}

// DeploymentList is a list of Deployments.
// +kubebuilder:object:root=true
type DeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Deployments.
	Items []Deployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Deployment{}, &DeploymentList{})
}
