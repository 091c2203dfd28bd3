package homelab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/postgres"
	"github.com/platform-operator/platform-operator/internal/reconcile"
)

// cleanupRetry is how soon a blocked cleanup is tried again: soon at first, then at most every five
// minutes, until the server answers, the cleanup timeout passes or the release annotation lets the
// object go.
func cleanupRetry(deleting time.Duration) time.Duration {
	return postgres.CleanupRetry(deleting, PostgresUnreachableRetry)
}

// reconcileDelete lets a deleted PostgresDatabase go once its database and role are dropped (Delete),
// or at once (Retain, or the release annotation). One without the finalizer never reached the server
// (the finalizer is added just before the first statement) and goes at once. A cleanup that cannot reach
// the server (its connection missing, not Ready, not allowed, or the server unreachable) sets
// Cleanup=False (CleanupBlocked) and retries, until the cleanup timeout (postgres.DefaultCleanupTimeout,
// or Options.PostgresCleanupTimeout) after the deletion: then the database and role are left on the
// server with a CleanupAbandoned Warning event, and the object goes, so neither it nor the deletion of its
// namespace waits forever. The Secret goes with the object (owner reference).
func (r *PostgresDatabaseReconciler) reconcileDelete(ctx context.Context, s *databaseScope) (ctrl.Result, error) {
	db := s.db
	if !controllerutil.ContainsFinalizer(db, homelabv1.PostgresDatabaseFinalizer) {
		return ctrl.Result{}, nil
	}
	switch {
	case db.Annotations[homelabv1.AnnotationReleaseFinalizer] == "true":
		r.Recorder.Eventf(db, corev1.EventTypeWarning, homelabv1.ReasonCleanupAbandoned,
			"Released by the %s annotation: database and role %s are left on the server untouched", homelabv1.AnnotationReleaseFinalizer, s.name)
		return ctrl.Result{}, r.releaseFinalizer(ctx, db)
	case db.Spec.ReclaimPolicy == homelabv1.DatabaseReclaimRetain:
		r.Recorder.Eventf(db, corev1.EventTypeNormal, EventRetained, "reclaimPolicy Retain: database and role %s stay on the server", s.name)
		return ctrl.Result{}, r.releaseFinalizer(ctx, db)
	}

	dropped, kept, err := r.drop(ctx, s)
	if err != nil {
		timeout := r.CleanupTimeout
		if timeout <= 0 {
			timeout = postgres.DefaultCleanupTimeout
		}
		retry, giveUp := postgres.NextCleanup(time.Since(db.DeletionTimestamp.Time), timeout, PostgresUnreachableRetry)
		if giveUp {
			r.Recorder.Eventf(db, corev1.EventTypeWarning, homelabv1.ReasonCleanupAbandoned,
				"Gave up dropping database and role %s after %s: %v. They are left on the server; drop them by hand", s.name, timeout, err)
			r.logins.Delete(db.UID)
			return ctrl.Result{}, r.releaseFinalizer(ctx, db)
		}
		msg := fmt.Sprintf("cannot drop database and role %s yet: %v. The operator retries until %s after the deletion, then leaves them on the server; to let the PostgresDatabase go at once without touching the server, annotate it %s=true",
			s.name, err, timeout, homelabv1.AnnotationReleaseFinalizer)
		s.fail(homelabv1.ConditionCleanup, metav1.ConditionFalse, homelabv1.ReasonCleanupBlocked, msg)
		s.secretName = db.Status.SecretName // the Secret stays until the object goes
		werr := r.status.Write(ctx, db, s.summarize())
		return ctrl.Result{RequeueAfter: retry}, werr
	}
	switch {
	case len(kept) > 0:
		r.Recorder.Eventf(db, corev1.EventTypeWarning, homelabv1.ReasonDatabaseClaimed, "Left on the server: %s", strings.Join(kept, "; "))
	case len(dropped) > 0:
		r.Recorder.Eventf(db, corev1.EventTypeNormal, reconcile.EventDeleted, "On %s:%d: %s", s.settings.Host, s.settings.Port, strings.Join(dropped, "; "))
	}
	r.logins.Delete(db.UID)
	return ctrl.Result{}, r.releaseFinalizer(ctx, db)
}

// drop drops the database and role on the connection's server. A connection that is missing, not Ready
// or unreachable is an error: the caller retries.
func (r *PostgresDatabaseReconciler) drop(ctx context.Context, s *databaseScope) (dropped, kept []string, err error) {
	conn, settings, _, msg, err := r.resolveConnection(ctx, s.db)
	if err != nil {
		return nil, nil, err
	}
	if settings == nil {
		return nil, nil, errors.New(msg)
	}
	s.settings = settings
	admin, err := postgres.Sessions.Acquire(ctx, sessionOwner(conn.Namespace, conn.Name), *settings)
	if err != nil {
		return nil, nil, fmt.Errorf("log in to %s:%d: %w", settings.Host, settings.Port, err)
	}
	defer func() { _ = admin.Close(ctx) }()
	return admin.Drop(ctx, s.name, s.owner)
}

// releaseFinalizer removes the operator's finalizer; an object already gone is success.
func (r *PostgresDatabaseReconciler) releaseFinalizer(ctx context.Context, db *homelabv1.PostgresDatabase) error {
	patch := client.MergeFromWithOptions(db.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(db, homelabv1.PostgresDatabaseFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, db, patch))
}
