package v1alpha1

// DeploymentReady's reasons (besides Ready, ApplyFailed and Waiting). Part of the API, like the others.
const (
	// ReasonWaitingForImage is an environment whose image the registry does not have yet (BuildReady
	// says why): nothing is deployed until it has.
	ReasonWaitingForImage = "WaitingForImage"
	// ReasonProgressing is a deploy applied whose Deployments or StatefulSets are not all available yet.
	ReasonProgressing = "Progressing"
	// ReasonFetchFailed is a commit the operator could not fetch from the repository (unreachable,
	// credentials refused, commit not on the branch).
	ReasonFetchFailed = "FetchFailed"
	// ReasonRenderFailed is a chart, manifest directory or kustomization that does not render: a missing
	// path, invalid YAML, a template error.
	ReasonRenderFailed = "RenderFailed"
	// ReasonObjectsRefused is a rendered deploy holding objects outside the environment's namespace
	// (cluster-scoped kinds, other namespaces, kinds the cluster does not serve): nothing is applied,
	// and the condition names them.
	ReasonObjectsRefused = "ObjectsRefused"
	// ReasonHelmFailed is a Helm install or upgrade that failed; a failed upgrade is rolled back to the
	// last good revision.
	ReasonHelmFailed = "HelmFailed"
	// ReasonReplicaFailure is a deploy applied whose Deployment's pods the cluster refuses to create
	// (Pod Security admission, quota): the message quotes the refusal. Only a change of the repository (or
	// of the namespace's limits) fixes it.
	ReasonReplicaFailure = "ReplicaFailure"
)

// Deploy events besides the kit's Created and Updated.
const (
	// EventDeployed is the Normal event of a commit deployed (a Helm revision, or objects applied).
	EventDeployed = "Deployed"
	// EventPruned is the Normal event of an object deleted because the commit deployed no longer holds it.
	EventPruned = "Pruned"
	// EventRolledBack is the Warning event of a failed Helm upgrade rolled back.
	EventRolledBack = "RolledBack"
)
