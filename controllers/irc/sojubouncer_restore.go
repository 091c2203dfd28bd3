package irc

import (
	"context"

	"github.com/jackc/pgx/v5"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/controllers/internal/pgrestore"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/kit/backup/restoresource"
)

// sojuRestorePending says whether b asks for a restore whose success the status does not record yet:
// until it does, soju does not run (no Deployment, so neither sojudb's admin user nor soju's migrations
// touch the database) and the database Secret is not named in the status (a Backup waits for it).
// sojuRestores is the SojuBouncer kind as restoresource.Watch reads it.
var sojuRestores = restoresource.Kind{Source: backupv1.SourceSojuBouncer,
	NewList: func() client.ObjectList { return &ircv1.SojuBouncerList{} },
	Pending: func(o client.Object) bool { return sojuRestorePending(o.(*ircv1.SojuBouncer)) }}

func sojuRestorePending(b *ircv1.SojuBouncer) bool {
	return pgrestore.Pending((*backupv1.RestoreSource)(b.Spec.Restore), (*backupv1.RestoredFrom)(b.Status.RestoredFrom))
}

// reconcileRestore restores spec.restore's backup into the bouncer's new, empty database (pgrestore, the
// restore PostgresDatabase runs too): the Job runs `backup restore` as the bouncer's role, with the login
// of the bouncer's own Secret {name}-db, which nothing else reads until soju starts. Before Restored is
// True the restored schema's version is read: one newer than the image's soju knows is refused
// (SchemaTooNew), since soju refuses it.
func (r *SojuBouncerReconciler) reconcileRestore(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	image := r.Image
	t := &pgrestore.Target{Session: s.Session, Object: s.b,
		GVK: ircv1.GroupVersion.WithKind(soju.Kind), Spec: (*backupv1.RestoreSource)(s.b.Spec.Restore), RestoredFrom: (*backupv1.RestoredFrom)(s.b.Status.RestoredFrom),
		Login: s.login, CredentialsSecret: soju.DatabaseSecretName(s.b),
		WaitReason: ircv1.ReasonWaiting, Again: "delete the SojuBouncer and create it again",
		Check: func(ctx context.Context, conn *pgx.Conn) (string, string, error) {
			found, recorded, err := soju.SchemaOf(ctx, conn)
			if err != nil {
				return "", "", err
			}
			if msg := soju.SchemaTooNew(image, found, recorded); msg != "" {
				return backupv1.ReasonSchemaTooNew, msg, nil
			}
			return "", "", nil
		}}
	done, res, err := r.restorer.Reconcile(ctx, t)
	s.status.RestoredFrom = (*ircv1.RestoredFrom)(done)
	return res, err
}
