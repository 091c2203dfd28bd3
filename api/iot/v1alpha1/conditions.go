package v1alpha1

// Condition types on a Deployment. Ready sums up Progressing and Available.
const (
	// ConditionReady is True when every selected device runs the current score.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the current score is being rolled out and devices keep reaching
	// it, and once it is complete (reason RolloutComplete, as for apps/v1 Deployments); False when the
	// rollout is held or stuck (paused, deadline, failures, an invalid selector, no NATS).
	ConditionProgressing = "Progressing"
	// ConditionAvailable is True when at least one selected device runs the current score and none of
	// the devices given it failed more than rollout.batched.maxUnavailable allows.
	ConditionAvailable = "Available"
	// ConditionPaused is True when spec.paused holds the rollout.
	ConditionPaused = "Paused"
)

// Condition reasons. They are part of the API: scripts and alerts may match on them.
const (
	// ReasonReady is Ready when every selected device runs the current score.
	ReasonReady = "Ready"
	// ReasonRollingOut is Progressing while devices are being given the current score.
	ReasonRollingOut = "RollingOut"
	// ReasonWaitingForBatch is Progressing while a batch has not reached the success threshold.
	ReasonWaitingForBatch = "WaitingForBatch"
	// ReasonRolloutComplete is Progressing True once every selected device runs the current score.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonProgressDeadlineExceeded is Progressing False when no device reached the current score for
	// longer than rollout.progressDeadlineSeconds.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonTooManyFailures is Progressing and Available False when more devices failed the current
	// score than maxUnavailable allows; no further batch is published.
	ReasonTooManyFailures = "TooManyFailures"
	// ReasonRollingBack is Progressing, Available and Ready False while the devices that received a failed
	// generation are given the previous successful score again (rollout.onFailure Rollback).
	ReasonRollingBack = "RollingBack"
	// ReasonRolledBack is Progressing, Available and Ready False once every device that received the
	// failed generation was given the previous successful score and reports it; the message names both
	// generations. The failed generation is not published again until the spec changes.
	ReasonRolledBack = "RolledBack"
	// ReasonRollbackUnavailable is Progressing False for a failed rollout with onFailure Rollback that has
	// no previous successful score to return to (the first generation failed, or its ControllerRevision was
	// pruned or deleted): the rollout pauses instead, as with onFailure Pause.
	ReasonRollbackUnavailable = "RollbackUnavailable"
	// ReasonNoDevices is Available False when the selector selects no registered device.
	ReasonNoDevices = "NoDevicesMatched"
	// ReasonDevicesRunning is Available True: devices run the current score.
	ReasonDevicesRunning = "DevicesRunning"
	// ReasonNoneRunning is Available False: no selected device runs the current score yet.
	ReasonNoneRunning = "NoneRunning"
	// ReasonPaused is Paused True, and Progressing False while paused.
	ReasonPaused = "Paused"
	// ReasonResumed is Paused False.
	ReasonResumed = "NotPaused"
	// ReasonNATSNotConfigured is every condition False when the operator runs without a NATS URL.
	ReasonNATSNotConfigured = "NATSNotConfigured"
	// ReasonNATSUnavailable is Progressing False when the NATS server could not be reached or refused a
	// request; the operator retries.
	ReasonNATSUnavailable = "NATSUnavailable"
	// ReasonInvalidSelector is Progressing False for a targetSelector that is not a valid label
	// selector (an operator outside In, NotIn, Exists, DoesNotExist, or values where none belong).
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonPolicyViolation is Progressing and Ready False (and a Warning event) for a Deployment outside
	// the operator's policy (--iot-fleet-policy, --iot-allowed-registries, --iot-require-digest), stored
	// before the policy changed or while the webhook was not installed: nothing is published for it, and
	// devices keep what they were given before.
	ReasonPolicyViolation = "PolicyViolation"
)

// Event reasons besides the condition reasons.
const (
	// EventPublished is the Normal event of desired state published to devices.
	EventPublished = "Published"
	// EventWithdrawn is the Normal event of desired state removed from devices that no longer match or
	// of a deleted deployment.
	EventWithdrawn = "Withdrawn"
	// EventDeviceFailed is the Warning event of the first failure on the current generation after none.
	EventDeviceFailed = "DeviceFailed"
)
