package irc

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/postgres"
	"github.com/platform-operator/platform-operator/internal/reconcile"
	"github.com/platform-operator/platform-operator/internal/soju"
)

// cleanupRetry is how soon a blocked cleanup is tried again: soon at first, then at most every five
// minutes, until the server answers, the cleanup timeout passes or the release annotation lets go.
func cleanupRetry(deleting time.Duration) time.Duration {
	return postgres.CleanupRetry(deleting, DatabaseRetry)
}

// nextCleanup says, for a cleanup blocked deleting after the deletion, when to try again, or that the
// cleanup timeout has passed and the operator gives up (leaving the database on the server). The
// PostgresDatabase controller shares the rule (postgres.NextCleanup).
func nextCleanup(deleting, timeout time.Duration) (retry time.Duration, giveUp bool) {
	return postgres.NextCleanup(deleting, timeout, DatabaseRetry)
}

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
func (r *SojuBouncerReconciler) reconcileDelete(ctx context.Context, s *sojuScope) (ctrl.Result, error) {
	b := s.b
	if !controllerutil.ContainsFinalizer(b, ircv1.SojuDatabaseFinalizer) {
		return ctrl.Result{}, nil
	}
	if decision, eventType, reason, msg := decideDelete(b); decision == releaseNow {
		r.Recorder.Event(b, eventType, reason, msg)
		return ctrl.Result{}, r.releaseFinalizer(ctx, b)
	}

	gone, err := r.deleteDeployment(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !gone {
		// The Deployment's own deletion wakes the bouncer (Owns).
		s.Set(ircv1.ConditionCleanup, metav1.ConditionFalse, ircv1.ReasonWaitingForDeployment,
			fmt.Sprintf("waiting for Deployment %s and its pod to go before database %s is dropped", soju.DeploymentName(b), soju.DatabaseName(b)))
		return ctrl.Result{}, r.status.Write(ctx, b, s.summarize())
	}

	dropped, kept, where, err := r.drop(ctx, b)
	if err != nil {
		deleting := time.Since(b.DeletionTimestamp.Time)
		timeout := r.CleanupTimeout
		if timeout <= 0 {
			timeout = DefaultCleanupTimeout
		}
		if retry, giveUp := nextCleanup(deleting, timeout); !giveUp {
			msg := fmt.Sprintf("cannot drop database and role %s yet: %v. The operator retries until %s after the deletion, then leaves them on the server; to let the SojuBouncer go at once without touching the server, annotate it %s=true",
				soju.DatabaseName(b), err, timeout, ircv1.AnnotationReleaseDatabase)
			s.fail(ircv1.ConditionCleanup, ircv1.ReasonCleanupBlocked, msg)
			werr := r.status.Write(ctx, b, s.summarize())
			return ctrl.Result{RequeueAfter: retry}, werr
		}
		r.Recorder.Eventf(b, corev1.EventTypeWarning, ircv1.ReasonCleanupAbandoned,
			"Gave up dropping database and role %s after %s: %v. They are left on the server; drop them by hand", soju.DatabaseName(b), timeout, err)
		return ctrl.Result{}, r.releaseFinalizer(ctx, b)
	}
	switch {
	case len(kept) > 0:
		r.Recorder.Eventf(b, corev1.EventTypeWarning, ircv1.ReasonDatabaseClaimed, "Left on the server: %s", strings.Join(kept, "; "))
	case len(dropped) > 0:
		r.Recorder.Eventf(b, corev1.EventTypeNormal, ircv1.ReasonDatabaseDropped, "On %s: %s", where, strings.Join(dropped, "; "))
	}
	r.logins.Delete(b.UID)
	return ctrl.Result{}, r.releaseFinalizer(ctx, b)
}

// deleteDeployment deletes soju's Deployment when the bouncer controls it, in the foreground, and says
// whether it is gone. A Deployment of that name the bouncer does not control is not soju's: gone.
func (r *SojuBouncerReconciler) deleteDeployment(ctx context.Context, b *ircv1.SojuBouncer) (bool, error) {
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
	r.Recorder.Eventf(b, corev1.EventTypeNormal, reconcile.EventDeleted, "Deleted Deployment %s: its database is dropped once its pod is gone", d.Name)
	return false, nil
}

// drop drops the bouncer's database and role on its admin connection's server. A connection that is
// missing, unusable or unreachable is an error: the caller retries.
func (r *SojuBouncerReconciler) drop(ctx context.Context, b *ircv1.SojuBouncer) (dropped, kept []string, where string, err error) {
	settings, _, msg, err := r.adminSettings(ctx, b)
	if err != nil {
		return nil, nil, "", err
	}
	if settings == nil {
		return nil, nil, "", fmt.Errorf("%s", msg)
	}
	where = fmt.Sprintf("%s:%d", settings.Host, settings.Port)
	admin, err := postgres.Sessions.Acquire(ctx, "", *settings)
	if err != nil {
		return nil, nil, where, fmt.Errorf("log in to %s: %w", where, err)
	}
	defer func() { _ = admin.Close(ctx) }()
	dropped, kept, err = admin.Drop(ctx, soju.DatabaseName(b), soju.DatabaseOwner(b))
	return dropped, kept, where, err
}

// releaseFinalizer removes the operator's finalizer; a bouncer already gone is success.
func (r *SojuBouncerReconciler) releaseFinalizer(ctx context.Context, b *ircv1.SojuBouncer) error {
	patch := client.MergeFromWithOptions(b.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(b, ircv1.SojuDatabaseFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, b, patch))
}
