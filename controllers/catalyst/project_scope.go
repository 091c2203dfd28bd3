package catalyst

import (
	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// projectScope is one reconcile of a Project: the kit's session on a copy of its status, and its
// Environments (those it allows), which it counts or, once it is deleted, deletes and waits for.
type projectScope struct {
	*reconcile.Session
	project *catalystv1.Project
	status  *catalystv1.ProjectStatus
	// envs are the Project's Environments.
	envs []catalystv1.Environment
	// protected are the namespace/names of those protected from deletion, which a deleted Project waits for.
	protected []string
}

// newProjectScope starts one reconcile of p with its Environments envs, on a copy of its status.
func (r *ProjectReconciler) newProjectScope(p *catalystv1.Project, envs []catalystv1.Environment) *projectScope {
	status := p.Status.DeepCopy()
	return &projectScope{
		Session: &reconcile.Session{Owner: p, Before: p.Status.Conditions, Conditions: &status.Conditions, Client: r.Client, Recorder: r.Recorder},
		project: p, status: status, envs: envs,
	}
}
