package v1alpha1

// Reasons and events of references across namespaces, expiring previews and protected deployments.
const (
	// ReasonProjectNotAllowed is an environment whose spec.projectRef names a Project in another
	// namespace that does not list the environment's namespace in spec.allowedEnvironmentNamespaces (or
	// does not exist: the two are not told apart, so that no tenant learns another namespace's Projects).
	// Nothing is built or deployed for it; a namespace it already has is kept.
	ReasonProjectNotAllowed = "ProjectNotAllowed"
)

// Event reasons of previews and production.
const (
	// EventExpired is the Normal event of an environment deleted because spec.expireAfter passed.
	EventExpired = "Expired"
	// EventReady is the Normal event of an environment that became Ready, with its URL: once per
	// generation, and again when the URL changes.
	EventReady = "Ready"
)

// EventEnvironmentsProtected is the Warning event of a deleted Project waiting for deployment
// Environments that are protected from deletion (without catalyst.dev/allow-deletion: "true").
const EventEnvironmentsProtected = "EnvironmentsProtected"
