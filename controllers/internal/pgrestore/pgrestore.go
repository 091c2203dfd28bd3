// Package pgrestore restores a logical backup (pg_dump's custom format) into a new object's empty
// PostgreSQL database: the one restore flow of every kind whose data is a database (PostgresDatabase,
// SojuBouncer). It resolves spec.restore (restoresource), checks that the database holds no table, runs
// the restore Job (internal/kit/backup/jobs) as the object's own role, turns the Job's end into the
// Restored condition (with the failed container's last words), runs the kind's own check of the restored
// data, and deletes the Job (with the credentials Secret it controls) once the status says restored.
package pgrestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/backup/restoresource"
	"github.com/platform-operator/platform-operator/internal/kit/ownimage"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// Timing and event reasons of a restore.
const (
	// WaitRecheck is how often a restore that waits for its Backup, store or operator image looks again,
	// besides the watches on them.
	WaitRecheck = time.Minute
	// EventRestored is the Normal event of a restore that succeeded.
	EventRestored = "Restored"
	// CleanupDelay is when a restore that just succeeded is looked at again: to delete its Job once the
	// status says restored, and to hand the data to the workload.
	CleanupDelay = 5 * time.Second
	// lastWordsLimit bounds the failed container's message kept in the condition.
	lastWordsLimit = 1024
)

// finalReasons are the Restored reasons nothing retries: only a new object tries again.
var finalReasons = []string{backupv1.ReasonRestoreFailed, backupv1.ReasonTargetNotEmpty, backupv1.ReasonWrongKind, backupv1.ReasonSchemaTooNew}

// Restorer runs the restores of one controller's kind.
type Restorer struct {
	// Client reads the Jobs, Backups and stores from the cache and writes the restore's children.
	Client client.Client
	// APIReader lists a failed Job's pods (their termination messages), which are not cached, and reads the
	// store's credentials Secret for the restore's pre-check (the cache holds Secrets without data).
	APIReader client.Reader
	// Applier writes the restore's children with the operator's field owner.
	Applier *apply.Applier
	// OwnImage finds the operator's own image, which the Job's init container runs.
	OwnImage *ownimage.Resolver
	// PostgresImage is pg_restore's image template, with %d for the server's major version.
	PostgresImage string
	// BackupsServed says whether the cluster serves the backup API (nothing is read or watched without).
	BackupsServed bool
}

// Target is one reconcile's restore of one object: what the kind's controller found, and how it records
// what the restore finds.
type Target struct {
	// Session is the reconcile's; the Restored condition and the events go through it.
	Session *reconcile.Session
	// Object is the object restored into; GVK its kind (the Job's owner, and the artifact's kind).
	Object client.Object
	GVK    schema.GroupVersionKind
	// Spec is the object's spec.restore; RestoredFrom its status.restoredFrom as read.
	Spec         *backupv1.RestoreSource
	RestoredFrom *backupv1.RestoredFrom
	// Login is the role's login to the new database, nil until the database is ready.
	Login *postgres.Settings
	// Credentials is the role's Secret (holding jobs.DatabaseURLKey), written under
	// jobs.RestoreSecretName and controlled by the Job, for a kind whose own Secret is written only once
	// restored; CredentialsLive is that Secret as read this reconcile (nil if none). Without Credentials,
	// the Job reads CredentialsSecret, a Secret of the object's the workload does not run with until then.
	Credentials       *corev1.Secret
	CredentialsLive   *corev1.Secret
	CredentialsSecret string
	// Check, when set, looks at the restored database (connected as the role) once the Job completed and
	// before Restored is True: a non-empty reason refuses it for good (Restored False with reason and
	// message), an error retries.
	Check func(ctx context.Context, conn *pgx.Conn) (reason, message string, err error)
	// WaitReason is the reason of a restore that waits for an earlier part (the database).
	WaitReason string
	// Again tells the user what tries again ("delete the PostgresDatabase and create it again").
	Again string
}

// Pending says whether an object with spec and status.restoredFrom done still waits for its restore: until
// it has, the workload gets neither the data nor its credentials.
func Pending(spec *backupv1.RestoreSource, done *backupv1.RestoredFrom) bool {
	return spec != nil && done == nil
}

// Reconcile is the restore step: it returns the restore that succeeded (status.restoredFrom), this
// reconcile or before, or nil. Without spec.restore it drops the Restored condition.
func (r *Restorer) Reconcile(ctx context.Context, t *Target) (*backupv1.RestoredFrom, ctrl.Result, error) {
	s := t.Session
	obj := t.Object
	if t.Spec == nil {
		s.Drop(backupv1.ConditionRestored)
		return nil, ctrl.Result{}, nil
	}
	if t.RestoredFrom != nil {
		s.Set(backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored, Message(t.RestoredFrom))
		// The Job (and the credentials Secret it controls) are done with: they go once the status that
		// says so is written, so that a lost status write never finds the Job gone and the database
		// full, which it would take for a database it must not touch.
		return t.RestoredFrom, ctrl.Result{}, jobs.DeleteControlled(ctx, r.Client, obj, jobs.RestoreName(obj))
	}
	if c := meta.FindStatusCondition(s.Before, backupv1.ConditionRestored); c != nil && c.Status == metav1.ConditionFalse && isFinal(c.Reason) {
		s.Set(backupv1.ConditionRestored, c.Status, c.Reason, c.Message)
		return nil, ctrl.Result{}, nil
	}
	if !r.BackupsServed {
		// Nothing is watched or cached of the backup API: installing it takes an operator restart.
		s.Fail(backupv1.ConditionRestored, reconcile.ReasonAPINotAvailable,
			"the cluster does not serve the backup API (backup.josie.cloud/v1alpha1 Backups and BackupStores): nothing to restore from")
		return nil, ctrl.Result{}, nil
	}
	if t.Login == nil {
		s.Set(backupv1.ConditionRestored, metav1.ConditionUnknown, t.WaitReason, "waiting for the database")
		return nil, ctrl.Result{}, nil
	}
	src, err := restoresource.Resolve(ctx, r.Client, obj.GetNamespace(), backupv1.SourceKind(t.GVK.Kind), t.Spec,
		restoresource.WithAPIReader(r.APIReader))
	var refusal *restoresource.Refusal
	switch {
	case errors.As(err, &refusal) && refusal.Wait:
		s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, refusal.Reason, refusal.Message)
		return nil, ctrl.Result{RequeueAfter: WaitRecheck}, nil
	case errors.As(err, &refusal):
		s.Fail(backupv1.ConditionRestored, refusal.Reason, refusal.Message)
		return nil, ctrl.Result{}, nil
	case err != nil:
		s.Set(backupv1.ConditionRestored, metav1.ConditionUnknown, t.WaitReason, "the restore source could not be read: "+err.Error())
		return nil, ctrl.Result{}, err
	}

	job := &batchv1.Job{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: jobs.RestoreName(obj)}, job); {
	case apierrors.IsNotFound(err):
		res, err := r.start(ctx, t, src)
		return nil, res, err
	case err != nil:
		return nil, ctrl.Result{}, err
	case !metav1.IsControlledBy(job, obj):
		s.Fail(backupv1.ConditionRestored, reconcile.ReasonNameConflict, fmt.Sprintf("Job %s is not this %s's", job.Name, t.GVK.Kind))
		return nil, ctrl.Result{}, nil
	}
	switch jobs.Finished(job) {
	case batchv1.JobComplete:
		if t.Check != nil {
			reason, msg, err := r.check(ctx, t)
			switch {
			case err != nil:
				s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring,
					fmt.Sprintf("Job %s completed; the restored database could not be checked yet: %v", job.Name, err))
				return nil, ctrl.Result{RequeueAfter: WaitRecheck}, nil
			case reason != "":
				s.Fail(backupv1.ConditionRestored, reason, msg)
				return nil, ctrl.Result{}, nil
			}
		}
		// The Job's completion is the time: a reconcile that sees the Job again before the cache has the
		// status written now computes the same status (no second write, no second event).
		done := src.RestoredFrom(jobs.CompletionTime(job))
		s.Set(backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored, Message(done))
		if reconcile.Changed(s.Before, backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored) {
			s.Normal(EventRestored, Message(done))
		}
		// Once more, soon, to delete the Job when the status says restored.
		return done, ctrl.Result{RequeueAfter: CleanupDelay}, nil
	case batchv1.JobFailed:
		msg := fmt.Sprintf("Job %s failed: the database is unusable and nothing is retried (%s)", job.Name, t.Again)
		if _, words := jobs.LastWords(ctx, r.APIReader, job, lastWordsLimit); words != "" {
			msg += ": " + words
		}
		s.Fail(backupv1.ConditionRestored, backupv1.ReasonRestoreFailed, msg)
		return nil, ctrl.Result{}, nil
	}
	// Running: keep its credentials Secret current (a password made again lives there).
	if res, err := r.applyCredentials(ctx, t, job); err != nil || res.RequeueAfter != 0 {
		return nil, res, err
	}
	s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring,
		fmt.Sprintf("Job %s is restoring %s/%s of BackupStore %s", job.Name, src.SourceName, src.ID, src.Store.Name))
	return nil, ctrl.Result{}, nil
}

// start checks that the database holds no table (a database kept by reclaimPolicy Retain and taken up
// again is never written into), chooses pg_restore's image from the server's major version, and applies
// the store file, the Job and its credentials Secret.
func (r *Restorer) start(ctx context.Context, t *Target, src *restoresource.Source) (ctrl.Result, error) {
	s := t.Session
	operatorImage := r.OwnImage.Get(ctx)
	if operatorImage == "" {
		s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonOperatorImageUnknown,
			"the operator does not know its own image, which the restore Job's init container runs: RELATED_IMAGE_OPERATOR is unset and its own pod (POD_NAMESPACE, POD_NAME) could not be read")
		return ctrl.Result{RequeueAfter: WaitRecheck}, nil
	}
	tables, major, err := InspectTarget(ctx, *t.Login)
	if err != nil {
		s.Set(backupv1.ConditionRestored, metav1.ConditionUnknown, t.WaitReason, "the new database could not be inspected: "+err.Error())
		return ctrl.Result{RequeueAfter: WaitRecheck}, nil
	}
	if len(tables) > 0 {
		s.Fail(backupv1.ConditionRestored, backupv1.ReasonTargetNotEmpty,
			fmt.Sprintf("database %s already holds %d tables (%s...): a restore never writes into a database with content", t.Login.Database, len(tables), tables[0]))
		return ctrl.Result{}, nil
	}
	creds := t.CredentialsSecret
	if t.Credentials != nil {
		creds = jobs.RestoreSecretName(t.Object)
	}
	akid, sak, ca := jobs.StoreKeys(src.Store)
	in := jobs.RestoreInput{Target: t.GVK, Store: src.Store, AccessKeyIDKey: akid, SecretAccessKeyKey: sak, CAKey: ca,
		CredentialsSecret: creds, SourceName: src.SourceName, ID: src.ID,
		OperatorImage: operatorImage, PostgresImage: jobs.PostgresImage(r.PostgresImage, major)}
	cm, err := jobs.RestoreConfigMap(t.Object, in)
	if err != nil {
		return ctrl.Result{}, err
	}
	if applied, res, err := s.Apply(ctx, cm, backupv1.ConditionRestored); !applied {
		return res, err
	}
	job := jobs.RestoreJob(t.Object, in)
	if applied, res, err := s.Apply(ctx, job, backupv1.ConditionRestored); !applied {
		return res, err
	}
	if res, err := r.applyCredentials(ctx, t, job); err != nil || res.RequeueAfter != 0 {
		return res, err
	}
	s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring,
		fmt.Sprintf("Job %s is restoring %s/%s of BackupStore %s (image %s)", job.Name, src.SourceName, src.ID, src.Store.Name, in.PostgresImage))
	return ctrl.Result{}, nil
}

// applyCredentials writes t.Credentials to the restore's Secret, controlled by the live Job; nothing when
// the kind's Job reads a Secret of its own.
func (r *Restorer) applyCredentials(ctx context.Context, t *Target, job *batchv1.Job) (ctrl.Result, error) {
	if t.Credentials == nil {
		return ctrl.Result{}, nil
	}
	creds := jobs.RestoreSecret(t.Object, job, t.Credentials)
	if t.CredentialsLive != nil && jobs.IsRestoreSecret(t.Object, t.CredentialsLive) && apply.Holds(t.CredentialsLive, creds) {
		return ctrl.Result{}, nil
	}
	if _, err := r.Applier.Apply(ctx, job, creds); err != nil {
		return t.Session.ApplyFailed(backupv1.ConditionRestored, creds, err, reconcile.Refusal{})
	}
	return ctrl.Result{}, nil
}

// check connects to the restored database as the role and runs t.Check.
func (r *Restorer) check(ctx context.Context, t *Target) (string, string, error) {
	conn, err := connect(ctx, *t.Login)
	if err != nil {
		return "", "", err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	return t.Check(ctx, conn)
}

// InspectTarget connects as the database's own role and returns the database's user tables and the
// server's major version.
func InspectTarget(ctx context.Context, login postgres.Settings) ([]string, int, error) {
	conn, err := connect(ctx, login)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		return nil, 0, err
	}
	tables, err := backup.UserTables(ctx, conn)
	return tables, num / 10000, err
}

// connect opens a session as login, bounded in time; the password never appears in its error.
func connect(ctx context.Context, login postgres.Settings) (*pgx.Conn, error) {
	cfg, err := login.ConnConfig()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, Redacted(err, login.Password)
	}
	return conn, nil
}

// Redacted is err without secret in its text.
func Redacted(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), secret, "[redacted]"))
}

// Message is the Restored condition's (and event's) message of a restore that succeeded.
func Message(f *backupv1.RestoredFrom) string {
	what := fmt.Sprintf("%s/%s of BackupStore %s", f.SourceName, f.ID, f.Store)
	if f.Backup != "" {
		what = fmt.Sprintf("Backup %s (%s)", f.Backup, what)
	}
	return "restored from " + what
}

func isFinal(reason string) bool {
	for _, r := range finalReasons {
		if r == reason {
			return true
		}
	}
	return false
}
