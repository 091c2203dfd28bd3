package v1alpha1

// Condition types on an Environment. Ready sums up NamespaceReady and IngressReady; BuildReady and
// DeploymentReady report the parts this version of the operator does not do yet.
const (
	// ConditionReady is True when the environment's namespace and ingress are ready and status.url is
	// set. On a Project it is True when the project is usable.
	ConditionReady = "Ready"
	// ConditionNamespaceReady reports the namespace and what locks it down: quota, limit range and
	// network policy.
	ConditionNamespaceReady = "NamespaceReady"
	// ConditionBuildReady reports the environment's image: True once the registry has the image of
	// spec.source.commitSha (found there, or built by a Job and found there after).
	ConditionBuildReady = "BuildReady"
	// ConditionDeploymentReady reports the application's deployment. This version deploys nothing: it is
	// Unknown with reason NotImplemented.
	ConditionDeploymentReady = "DeploymentReady"
	// ConditionIngressReady reports the Ingress and its cert-manager Certificate.
	ConditionIngressReady = "IngressReady"
)

// Condition reasons. They are part of the API: the web application, scripts and alerts may match on them.
// ReasonApplyFailed and ReasonAPINotAvailable are the shared reconcile kit's strings.
const (
	// ReasonReady is a part that is ready, and Ready when every part is.
	ReasonReady = "Ready"
	// ReasonApplied is a part whose objects are applied and need nothing more to be ready.
	ReasonApplied = "Applied"
	// ReasonNamespaceConflict is an environment whose namespace exists and was not made by the operator
	// for this very Environment (a pre-existing namespace, one made for another Environment, or a
	// reserved name: default, kube-*, openshift-*). The namespace is left untouched.
	ReasonNamespaceConflict = "NamespaceConflict"
	// ReasonProjectNotFound is an environment whose spec.projectRef names no Project.
	ReasonProjectNotFound = "ProjectNotFound"
	// ReasonProjectLimitExceeded is an environment whose Project asks for more than the operator's
	// administrator allows (a quota above the ceiling, a domain or ClusterIssuer not allowed): the message
	// names each field and the rule. Nothing is made until the Project or the operator's flags change.
	ReasonProjectLimitExceeded = "ProjectLimitExceeded"
	// ReasonProjectDeleting is an environment whose Project is being deleted (and deletes it).
	ReasonProjectDeleting = "ProjectDeleting"
	// ReasonNamespaceTerminating is a namespace Kubernetes is still deleting.
	ReasonNamespaceTerminating = "NamespaceTerminating"
	// ReasonWaiting is a part held until an earlier part is ready.
	ReasonWaiting = "Waiting"
	// ReasonCertificatePending is a Certificate cert-manager has not issued yet.
	ReasonCertificatePending = "CertificatePending"
	// ReasonNotImplemented is a part this version of the operator does not perform (builds and
	// deployments arrive in a later version).
	ReasonNotImplemented = "NotImplemented"
	// ReasonApplyFailed is a part whose object the API server refused or could not take.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonAPINotAvailable is a part that needs an API the cluster does not serve (cert-manager).
	ReasonAPINotAvailable = "APINotAvailable"
	// ReasonNameConflict is a part whose object's name is taken, inside the environment's namespace, by
	// an object the operator did not make.
	ReasonNameConflict = "NameConflict"
	// ReasonDeleting is a project or environment being deleted.
	ReasonDeleting = "Deleting"

	// ReasonImageExists is an image the registry already had: nothing was built.
	ReasonImageExists = "ImageExists"
	// ReasonImagePushed is an image a build Job pushed and the registry was seen to have after.
	ReasonImagePushed = "ImagePushed"
	// ReasonBuilding is a build Job making the image.
	ReasonBuilding = "Building"
	// ReasonBuildFailed is a build Job that failed; no new Job is made for the commit until
	// spec.source.commitSha or the catalyst.catalyst.dev/retry-build annotation changes.
	ReasonBuildFailed = "BuildFailed"
	// ReasonImageMissingAfterBuild is a build Job that succeeded while the registry still lacks its image.
	ReasonImageMissingAfterBuild = "ImageMissingAfterBuild"
	// ReasonRegistryUnreachable is a registry that could not be asked (network, TLS, a server error);
	// the operator asks again with a growing delay.
	ReasonRegistryUnreachable = "RegistryUnreachable"
	// ReasonRegistryUnauthorized is a registry that refused the credentials of spec.build.registrySecretRef
	// (or anonymous access without them).
	ReasonRegistryUnauthorized = "RegistryUnauthorized"
	// ReasonBuildNotConfigured is a Project without spec.build: the operator has no registry to look in.
	ReasonBuildNotConfigured = "BuildNotConfigured"
	// ReasonCommitMissing is an environment without spec.source.commitSha: there is no image to look for.
	ReasonCommitMissing = "CommitMissing"
	// ReasonCommitAbbreviated is an environment whose image must be built while spec.source.commitSha is
	// abbreviated: the builder checks out only a whole commit id (40 or 64 hexadecimal digits).
	ReasonCommitAbbreviated = "CommitAbbreviated"
	// ReasonSecretInvalid is a Secret named by spec.build.registrySecretRef or spec.source.secretRef that
	// does not exist or does not hold what it should.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonRegistryNotAllowed is a Project whose registry (spec.build.registry, or the operator's
	// --catalyst-default-registry) is not in the operator's --catalyst-registries: the operator neither
	// asks it for the image nor builds for it.
	ReasonRegistryNotAllowed = "RegistryNotAllowed"
	// ReasonGitHostNotAllowed is an image to build from a repository whose host the operator may not
	// fetch from (--catalyst-git-hosts): no build Job is made.
	ReasonGitHostNotAllowed = "GitHostNotAllowed"
)

// Event reasons besides the condition reasons and the kit's Created, Updated and Deleted.
const (
	// EventNamespaceDeleted is the Normal event of an environment's namespace deleted with it.
	EventNamespaceDeleted = "NamespaceDeleted"
	// EventEnvironmentsDeleted is the Normal event of a deleted Project's Environments deleted with it.
	EventEnvironmentsDeleted = "EnvironmentsDeleted"
	// EventBuildStarted is the Normal event of a build Job made.
	EventBuildStarted = "BuildStarted"
	// EventBuildSucceeded is the Normal event of a build Job that pushed the image.
	EventBuildSucceeded = "BuildSucceeded"
)
