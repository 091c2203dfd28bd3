package homelab

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// postgresDatabaseScope is one reconcile of one PostgresDatabase.
type postgresDatabaseScope struct {
	*reconcile.Session
	db    *homelabv1.PostgresDatabase
	name  string
	owner postgres.Owner

	// conn and settings are the connection's, once it is Ready and allowed.
	conn     *homelabv1.PostgresConnection
	settings *postgres.Settings
	// password is the role's password once the database step made sure the role has it.
	password    string
	rotation    string
	newPassword bool
	secretLive  *corev1.Secret
	secretName  string
	// restoredFrom is the restore that succeeded (spec.restore), this reconcile or before.
	restoredFrom *backupv1.RestoredFrom
	// lastBackup is the newest Completed Backup of the database: as the status shows it until
	// observeLastBackup reads it (a deleted database keeps it), nil when there is none.
	lastBackup *lastbackup.Last
}

// newPostgresDatabaseScope starts one reconcile of db, on a copy of its conditions.
func (r *PostgresDatabaseReconciler) newPostgresDatabaseScope(db *homelabv1.PostgresDatabase) *postgresDatabaseScope {
	conds := append([]metav1.Condition(nil), db.Status.Conditions...)
	name := db.Spec.DatabaseName
	if name == "" {
		name = postgres.Name(db.Namespace, db.Name)
	}
	s := &postgresDatabaseScope{
		Session: &reconcile.Session{Owner: db, Before: db.Status.Conditions, Conditions: &conds, Client: r.Client, Applier: r.applier, Recorder: r.Recorder},
		db:      db, name: name,
		owner:    postgres.Owner{Kind: "PostgresDatabase", Namespace: db.Namespace, Name: db.Name, UID: string(db.UID)},
		rotation: db.Annotations[homelabv1.AnnotationRotatePassword],
	}
	if t := db.Status.LastBackupTime; t != nil {
		s.lastBackup = &lastbackup.Last{Name: db.Status.LastBackup, Time: *t}
	}
	return s
}
