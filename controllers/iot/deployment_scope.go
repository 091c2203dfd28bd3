package iot

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// deploymentScope carries one reconcile's working state from step to step.
type deploymentScope struct {
	*reconcile.Session
	d      *iotv1.Deployment
	key    fleet.DeploymentKey
	status *iotv1.DeploymentStatus
	store  *store.Store

	natsMissing     bool
	natsError       string
	invalidSelector string
	snapshot        fleet.Snapshot
	progress        fleet.Progress
	hold            fleet.Hold
	stale           int
	// beats are the index's counts of the selection, for the aggregate's heartbeat times.
	beats fleet.SelectionCounts
	// rollback is the rollback of the current generation under way or through; rollbackUnavailable says
	// why a failed rollout that should roll back cannot.
	rollback            *rollback
	rollbackUnavailable string
	// oldest is the oldest "at" of the state records folded since the Deployment's last status.
	oldest   time.Time
	counting bool
	requeue  ctrl.Result
}

// newDeploymentScope starts one reconcile of d, on a copy of its status, with the fleet's store st (nil
// before NATS answers).
func (r *DeploymentReconciler) newDeploymentScope(d *iotv1.Deployment, st *store.Store) *deploymentScope {
	status := d.Status.DeepCopy()
	key := fleet.DeploymentKey{Namespace: d.Namespace, Name: d.Name}
	return &deploymentScope{
		Session: &reconcile.Session{Owner: d, Before: d.Status.Conditions, Conditions: &status.Conditions, Client: r.Client, Recorder: r.Recorder},
		d:       d, key: key, status: status, store: st,
		oldest: r.counters.TakeOldest(key),
	}
}

// session is a reconcile session about d alone, for the events of a Deployment outside a reconcile's
// steps (its deletion, the fleet's bad input).
func (r *DeploymentReconciler) session(d *iotv1.Deployment) *reconcile.Session {
	return &reconcile.Session{Owner: d, Conditions: &d.Status.Conditions, Client: r.Client, Recorder: r.Recorder}
}
