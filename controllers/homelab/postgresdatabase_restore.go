package homelab

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/controllers/internal/pgrestore"
	"github.com/platform-operator/platform-operator/internal/kit/backup/restoresource"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// Restore's timing and event reasons: the shared restore's (controllers/internal/pgrestore).
const (
	// RestoreWaitRecheck is how often a restore that waits for its Backup or store looks again, besides
	// the watches on both.
	RestoreWaitRecheck = pgrestore.WaitRecheck
	// EventRestored is the Normal event of a restore that succeeded.
	EventRestored = pgrestore.EventRestored
)

// restorePending says whether db asks for a restore that has not succeeded yet: until it has, the role's
// password lives in the restore's own Secret and the workload's Secret is not written.
// databaseRestores is the PostgresDatabase kind as restoresource.Watch reads it.
var databaseRestores = restoresource.Kind{Source: backupv1.SourcePostgresDatabase,
	NewList: func() client.ObjectList { return &homelabv1.PostgresDatabaseList{} },
	Pending: func(o client.Object) bool { return restorePending(o.(*homelabv1.PostgresDatabase)) }}

func restorePending(db *homelabv1.PostgresDatabase) bool {
	return pgrestore.Pending((*backupv1.RestoreSource)(db.Spec.Restore), (*backupv1.RestoredFrom)(db.Status.RestoredFrom))
}

// reconcileRestore restores spec.restore's backup into the new, empty database before anything else may
// use it (pgrestore): the Job runs `backup restore` as the database's role, reading the role's login from
// a Secret of its own; on success status.restoredFrom is set (and the workload's Secret written by
// reconcileSecret), on failure Restored is False with the program's last words and nothing is retried.
func (r *PostgresDatabaseReconciler) reconcileRestore(ctx context.Context, s *postgresDatabaseScope) (ctrl.Result, error) {
	t := &pgrestore.Target{Session: s.Session, Object: s.db,
		GVK: postgresDatabaseKind, Spec: (*backupv1.RestoreSource)(s.db.Spec.Restore), RestoredFrom: (*backupv1.RestoredFrom)(s.db.Status.RestoredFrom),
		WaitReason: homelabv1.ReasonWaitingForDependency, Again: "delete the PostgresDatabase and create it again"}
	if s.password != "" {
		login := s.settings.As(s.name, s.password, s.name)
		t.Login = &login
		t.Credentials = postgres.Secret(s.db, postgresDatabaseKind, *s.settings, s.name, s.password, s.rotation)
		t.CredentialsLive = s.secretLive
	}
	done, res, err := r.restorer.Reconcile(ctx, t)
	s.restoredFrom = done
	return res, err
}
