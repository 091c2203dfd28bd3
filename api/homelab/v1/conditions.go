package v1

// Condition types and reasons every homelab kind shares. Each kind adds the condition types of its own parts
// next to its type; Ready sums them up. They are part of the API: scripts and alerts may match on them.
const (
	// ConditionReady is True when every part of the resource is ready.
	ConditionReady = "Ready"
)

// Reasons shared by the homelab kinds. ReasonApplyFailed, ReasonAPINotAvailable and ReasonNameConflict are the
// reconcile kit's strings, the same in every API of the operator.
const (
	// ReasonReady is a part that is ready, and Ready when every part is.
	ReasonReady = "Ready"
	// ReasonMissingDependency is a referenced object (Secret, PostgresConnection, Domain...) that does not
	// exist; the resource waits and is reconciled again when it appears.
	ReasonMissingDependency = "MissingDependency"
	// ReasonWaitingForDependency is a referenced object that exists but is not Ready yet.
	ReasonWaitingForDependency = "WaitingForDependency"
	// ReasonApplyFailed is a child the API server refused or could not take.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonAPINotAvailable is a child whose API (cert-manager, Istio) the cluster does not serve.
	ReasonAPINotAvailable = "APINotAvailable"
	// ReasonNameConflict is a child name taken by an object the operator did not make.
	ReasonNameConflict = "NameConflict"
)
