package catalyst

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// environmentScope carries one reconcile's working state from step to step: the Environment's steps,
// its build phase and its deploy phase all read and set it.
type environmentScope struct {
	*reconcile.Session
	env    *catalystv1.Environment
	status *catalystv1.EnvironmentStatus
	parts  catalyst.Parts

	// settings are the Project's choices over the defaults; valid once project is set.
	settings catalyst.Settings
	// project is the environment's Project, nil when it was not found or is being deleted.
	project *catalystv1.Project
	// namespace is the environment's namespace once it is the environment's and locked down.
	namespace string
	// image is the environment's image, <registry>/<repository>:<commit SHA>, set only once the registry
	// is known to have it; imageDigest is its manifest's digest. Later steps deploy only when it is set.
	image       string
	imageDigest string
	// expired is set by the expiry step once it deleted the environment: nothing more is made for it.
	expired bool
	// announced is the reconciler's memory of the Ready events it sent (announceReady).
	announced *sync.Map
	// tenant is a client acting as the tenant ServiceAccount of the namespace: what deploys, reads back and
	// prunes a repository's objects. Set by the deploy phase once the namespace is ready.
	tenant client.Client
}

// newEnvironmentScope starts one reconcile of env, on a copy of its status.
func (r *EnvironmentReconciler) newEnvironmentScope(env *catalystv1.Environment) *environmentScope {
	status := env.Status.DeepCopy()
	return &environmentScope{
		Session: &reconcile.Session{Owner: env, Before: env.Status.Conditions, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		env: env, status: status, parts: catalyst.PartsOf(env), announced: &r.announced,
	}
}

// waiting sets condType False (Waiting) while the Project or the namespace a part needs is not there yet,
// and says whether it did: the Ingress, the build and the deploy each wait for both.
func (s *environmentScope) waiting(condType string) bool {
	switch {
	case s.project == nil:
		s.Set(condType, metav1.ConditionFalse, catalystv1.ReasonWaiting, "waiting for the Project")
	case s.namespace == "":
		s.Set(condType, metav1.ConditionFalse, catalystv1.ReasonWaiting, "waiting for the namespace")
	default:
		return false
	}
	return true
}

// namespaceName is the namespace the environment has (status.namespace) or gets (derived from its parts).
func (s *environmentScope) namespaceName() string {
	if s.env.Status.Namespace != "" {
		return s.env.Status.Namespace
	}
	return s.parts.Namespace()
}
