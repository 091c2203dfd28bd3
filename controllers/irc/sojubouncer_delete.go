package irc

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// deleteDecision is what a deleted bouncer's cleanup does next, before any request is sent.
type deleteDecision int

const (
	// releaseNow lets the bouncer go without touching the server (no finalizer, Retain, or released).
	releaseNow deleteDecision = iota
	// dropDatabase drops the database and role, once soju's Deployment is gone.
	dropDatabase
)

// decideDelete is the cleanup's first choice, from the bouncer alone: the release annotation and
// reclaimPolicy Retain let it go at once (with the given event), Delete drops the database.
func decideDelete(b *ircv1.SojuBouncer) (decision deleteDecision, eventType, reason, message string) {
	name := soju.DatabaseName(b)
	switch {
	case b.Annotations[ircv1.AnnotationReleaseDatabase] == "true":
		return releaseNow, corev1.EventTypeWarning, ircv1.ReasonCleanupAbandoned,
			fmt.Sprintf("Released by the %s annotation: database and role %s are left on the server untouched", ircv1.AnnotationReleaseDatabase, name)
	case b.Spec.Database.ReclaimPolicy == ircv1.ReclaimRetain:
		return releaseNow, corev1.EventTypeNormal, ircv1.ReasonDatabaseRetained,
			fmt.Sprintf("reclaimPolicy Retain: database and role %s stay on the server; a new SojuBouncer %s in this namespace takes them up again", name, b.Name)
	default:
		return dropDatabase, "", "", ""
	}
}

// reconcileDelete lets a deleted SojuBouncer go once its database and role are dropped (Delete), or at
// once (Retain, or the release annotation). One without the finalizer never reached a server and goes at
// once. Under Delete, soju's Deployment is deleted first (foreground: its pod is gone when it is), so no
// soju holds the database while it is dropped. A cleanup that cannot reach the server sets
// CleanupDone=False (CleanupBlocked) and retries, until DefaultCleanupTimeout (or CleanupTimeout) after
// the deletion: then the database is left on the server with a Warning event, and the bouncer goes.
// The other children go with the bouncer (owner references).
func (r *SojuBouncerReconciler) reconcileDelete(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	b := s.b
	if !r.finalizer.Has(b) {
		return ctrl.Result{}, nil
	}
	if decision, eventType, reason, msg := decideDelete(b); decision == releaseNow {
		s.Event(eventType, reason, msg)
		return ctrl.Result{}, r.finalizer.Release(ctx, b)
	}

	gone, err := r.deleteDeployment(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !gone {
		// The Deployment's own deletion wakes the bouncer (Owns).
		s.Set(ircv1.ConditionCleanup, metav1.ConditionFalse, ircv1.ReasonWaitingForDeployment,
			fmt.Sprintf("waiting for Deployment %s and its pod to go before database %s is dropped", soju.DeploymentName(b), soju.DatabaseName(b)))
		return ctrl.Result{}, r.status.Write(ctx, b, s.summarize())
	}

	admin, _, msg, err := r.adminSettings(ctx, b)
	if err == nil && admin == nil {
		err = errors.New(msg)
	}
	cleaned := r.db.Drop(ctx, postgres.Cleanup{UID: b.UID, Admin: admin, Unusable: err,
		Name: soju.DatabaseName(b), Owner: soju.DatabaseOwner(b), Deleting: time.Since(b.DeletionTimestamp.Time)})
	if cleaned.Event.Reason != "" {
		s.Event(cleaned.Event.Type, cleaned.Event.Reason, cleaned.Event.Message)
	}
	if !cleaned.Done {
		s.Fail(ircv1.ConditionCleanup, ircv1.ReasonCleanupBlocked, cleaned.Blocked)
		werr := r.status.Write(ctx, b, s.summarize())
		return ctrl.Result{RequeueAfter: cleaned.RequeueAfter}, werr
	}
	return ctrl.Result{}, r.finalizer.Release(ctx, b)
}

// deleteDeployment deletes soju's Deployment when the bouncer controls it, in the foreground, and says
// whether it is gone. A Deployment of that name the bouncer does not control is not soju's: gone.
func (r *SojuBouncerReconciler) deleteDeployment(ctx context.Context, s *sojuBouncerScope) (bool, error) {
	b := s.b
	d := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: soju.DeploymentName(b)}, d)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	case !metav1.IsControlledBy(d, b):
		return true, nil
	case !d.DeletionTimestamp.IsZero():
		return false, nil
	}
	err = r.Client.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: ptr.To(d.UID)})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	s.Normalf(reconcile.EventDeleted, "Deleted Deployment %s: its database is dropped once its pod is gone", d.Name)
	return false, nil
}
