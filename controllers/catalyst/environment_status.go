package catalyst

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// readyParts are the conditions Ready sums up, in the order it reports them.
var readyParts = []string{catalystv1.ConditionNamespaceReady, catalystv1.ConditionIngressReady, catalystv1.ConditionBuildReady,
	catalystv1.ConditionDeploymentReady}

// failedReasons are the reasons that only the user (a spec, a Project, a cluster change) fixes: an
// environment showing one is Failed until then.
var failedReasons = map[string]bool{
	catalystv1.ReasonProjectNotFound:   true,
	catalystv1.ReasonProjectNotAllowed: true,
	catalystv1.ReasonNamespaceConflict: true,
	catalystv1.ReasonNameConflict:      true,
	catalystv1.ReasonApplyFailed:       true,
	catalystv1.ReasonAPINotAvailable:   true,
	// The image's: a Project, a Secret, a commit or a Dockerfile to fix (or a retry to ask for).
	catalystv1.ReasonBuildNotConfigured:     true,
	catalystv1.ReasonBuildFailed:            true,
	catalystv1.ReasonImageMissingAfterBuild: true,
	catalystv1.ReasonRegistryUnauthorized:   true,
	catalystv1.ReasonSecretInvalid:          true,
	catalystv1.ReasonCommitAbbreviated:      true,
	catalystv1.ReasonRegistryNotAllowed:     true,
	catalystv1.ReasonGitHostNotAllowed:      true,
	// The deploy's: a repository, a chart or the Project's values to fix.
	catalystv1.ReasonRenderFailed:   true,
	catalystv1.ReasonObjectsRefused: true,
	catalystv1.ReasonHelmFailed:     true,
	catalystv1.ReasonReplicaFailure: true,
	// The Project's, beyond what the administrator allows.
	catalystv1.ReasonProjectLimitExceeded: true,
}

// buildingReasons are the BuildReady reasons of an image on its way: the environment is Building.
var buildingReasons = map[string]bool{
	catalystv1.ReasonBuilding:            true,
	catalystv1.ReasonRegistryUnreachable: true,
}

// summarize fills Ready, the phase, the namespace and observedGeneration from what the steps found.
func (s *environmentScope) summarize() *catalystv1.EnvironmentStatus {
	s.status.ObservedGeneration = s.env.Generation
	s.status.Namespace = s.namespace
	if s.project == nil {
		// Without its Project the environment's namespace is left as it is, and still the environment's.
		s.status.Namespace = s.env.Status.Namespace
	}
	s.Summarize(readyParts, catalystv1.ReasonReady, "the namespace is locked down and the Ingress serves "+s.status.URL)
	s.status.Phase = Phase(s.status.Conditions)
	s.announceReady()
	return s.status
}

// announceReady emits the Normal event Ready with the URL, which the web application may watch for,
// when the environment becomes Ready: the first time for its generation, or when the URL changed. An
// unchanged Ready environment emits nothing on later reconciles (nor after an operator restart).
func (s *environmentScope) announceReady() {
	was := s.env.Status
	if s.status.Phase != catalystv1.PhaseReady ||
		was.Phase == catalystv1.PhaseReady && was.ObservedGeneration == s.env.Generation && was.URL == s.status.URL {
		return
	}
	key, mark := client.ObjectKeyFromObject(s.env), fmt.Sprintf("%s/%d/%s", s.env.UID, s.env.Generation, s.status.URL)
	if last, ok := s.announced.Swap(key, mark); ok && last == mark {
		return // announced by a reconcile whose status write the cache had not shown this one yet
	}
	s.Normal(catalystv1.EventReady, "Environment is ready at "+s.status.URL)
}

// Phase is the phase the conditions amount to: Failed when a part waits for the user, Pending until the
// namespace is ready (or while there is no commit to find an image of), Building while the image is
// being built or the registry cannot be asked, Ready when Ready is True, Deploying in between.
func Phase(conds []metav1.Condition) catalystv1.Phase {
	for _, t := range readyParts {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status != metav1.ConditionTrue && failedReasons[c.Reason] {
			return catalystv1.PhaseFailed
		}
	}
	switch {
	case !meta.IsStatusConditionTrue(conds, catalystv1.ConditionNamespaceReady):
		return catalystv1.PhasePending
	case meta.IsStatusConditionTrue(conds, catalystv1.ConditionReady):
		return catalystv1.PhaseReady
	}
	build := meta.FindStatusCondition(conds, catalystv1.ConditionBuildReady)
	switch {
	case build != nil && build.Status != metav1.ConditionTrue && buildingReasons[build.Reason]:
		return catalystv1.PhaseBuilding
	case build != nil && build.Reason == catalystv1.ReasonCommitMissing:
		return catalystv1.PhasePending
	default:
		return catalystv1.PhaseDeploying
	}
}
