package homelab

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// newDatabaseProvisioner is how the PostgresDatabase controller makes databases: its connection's
// controller has checked the login's privileges, and a login the server refuses otherwise is a
// ServerError, as the connection reports it.
func newDatabaseProvisioner(cleanupTimeout time.Duration) *postgres.Provisioner {
	return &postgres.Provisioner{
		Kind: "PostgresDatabase", ReleaseAnnotation: homelabv1.AnnotationReleaseFinalizer,
		UnreachableRetry: PostgresUnreachableRetry, LoginErrorReason: homelabv1.ReasonServerError,
		DroppedReason: reconcile.EventDeleted, CleanupTimeout: cleanupTimeout,
	}
}

// reconcileDelete lets a deleted PostgresDatabase go once its database and role are dropped (Delete),
// or at once (Retain, or the release annotation). One without the finalizer never reached the server
// (the finalizer is added just before the first statement) and goes at once. A cleanup that cannot reach
// the server (its connection missing, not Ready, not allowed, or the server unreachable) sets
// Cleanup=False (CleanupBlocked) and retries, until the cleanup timeout (postgres.DefaultCleanupTimeout,
// or Options.PostgresCleanupTimeout) after the deletion: then the database and role are left on the
// server with a CleanupAbandoned Warning event, and the object goes, so neither it nor the deletion of its
// namespace waits forever. The Secret goes with the object (owner reference).
func (r *PostgresDatabaseReconciler) reconcileDelete(ctx context.Context, s *postgresDatabaseScope) (ctrl.Result, error) {
	db := s.db
	if !r.finalizer.Has(db) {
		return ctrl.Result{}, nil
	}
	switch {
	case db.Annotations[homelabv1.AnnotationReleaseFinalizer] == "true":
		s.Warnf(homelabv1.ReasonCleanupAbandoned,
			"Released by the %s annotation: database and role %s are left on the server untouched", homelabv1.AnnotationReleaseFinalizer, s.name)
		return ctrl.Result{}, r.finalizer.Release(ctx, db)
	case db.Spec.ReclaimPolicy == homelabv1.DatabaseReclaimRetain:
		s.Normalf(EventRetained, "reclaimPolicy Retain: database and role %s stay on the server", s.name)
		return ctrl.Result{}, r.finalizer.Release(ctx, db)
	}

	// A connection that is missing, not Ready or not allowed blocks the cleanup like an unreachable server.
	conn, settings, _, msg, err := r.resolveConnection(ctx, db)
	if err == nil && settings == nil {
		err = errors.New(msg)
	}
	c := postgres.Cleanup{UID: db.UID, Admin: settings, Unusable: err, Name: s.name, Owner: s.owner,
		Deleting: time.Since(db.DeletionTimestamp.Time)}
	if settings != nil {
		c.SessionOwner, c.MaxSessions = sessionOwner(conn.Namespace, conn.Name), conn.Spec.SessionBudget()
	}
	cleaned := r.db.Drop(ctx, c)
	if cleaned.Event.Reason != "" {
		s.Event(cleaned.Event.Type, cleaned.Event.Reason, cleaned.Event.Message)
	}
	if !cleaned.Done {
		s.Fail(homelabv1.ConditionCleanup, homelabv1.ReasonCleanupBlocked, cleaned.Blocked)
		s.secretName = db.Status.SecretName // the Secret stays until the object goes
		werr := r.status.Write(ctx, db, s.summarize())
		return ctrl.Result{RequeueAfter: cleaned.RequeueAfter}, werr
	}
	return ctrl.Result{}, r.finalizer.Release(ctx, db)
}
