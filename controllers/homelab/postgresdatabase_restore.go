package homelab

import (
	"context"
	"encoding/json"
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
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/backup/restoresource"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// Restore's timing and event reasons.
const (
	// RestoreWaitRecheck is how often a restore that waits for its Backup or store looks again, besides
	// the watches on both.
	RestoreWaitRecheck = time.Minute
	// EventRestored is the Normal event of a restore that succeeded.
	EventRestored = "Restored"
	// restoreCleanupDelay is when a restore that just succeeded is looked at again, to delete its Job.
	restoreCleanupDelay = 5 * time.Second
	// lastWordsLimit bounds the failed container's message kept in the condition.
	lastWordsLimit = 1024
)

// restorePending says whether db asks for a restore that has not succeeded yet: until it has, the role's
// password lives in the restore's own Secret and the workload's Secret is not written.
func restorePending(db *homelabv1.PostgresDatabase) bool {
	return db.Spec.Restore != nil && db.Status.RestoredFrom == nil
}

// reconcileRestore restores spec.restore's backup into the new, empty database before anything else may
// use it: the Job runs `backup restore` as the database's role; on success status.restoredFrom is set
// (and the workload's Secret written by reconcileSecret), on failure Restored is False with the
// program's last words and nothing is retried.
func (r *PostgresDatabaseReconciler) reconcileRestore(ctx context.Context, s *databaseScope) (ctrl.Result, error) {
	db := s.db
	if db.Spec.Restore == nil {
		s.Drop(homelabv1.ConditionRestored)
		return ctrl.Result{}, nil
	}
	if db.Status.RestoredFrom != nil {
		s.restoredFrom = db.Status.RestoredFrom
		s.Set(homelabv1.ConditionRestored, metav1.ConditionTrue, homelabv1.ReasonRestored, restoredMessage(s.restoredFrom))
		// The Job (and its credentials Secret, which it controls) are done with: they go once the status
		// that says so is written, so that a lost status write never finds the Job gone and the database
		// full, which it would take for a database it must not touch.
		return ctrl.Result{}, r.deleteRestoreJob(ctx, db)
	}
	if c := meta.FindStatusCondition(s.before, homelabv1.ConditionRestored); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == homelabv1.ReasonRestoreFailed || c.Reason == homelabv1.ReasonTargetNotEmpty || c.Reason == homelabv1.ReasonWrongKind) {
		// Final: only a new PostgresDatabase tries again.
		s.Set(homelabv1.ConditionRestored, c.Status, c.Reason, c.Message)
		return ctrl.Result{}, nil
	}
	if !r.Capabilities.Backups {
		// Nothing is watched or cached of the backup API here: installing it takes an operator restart.
		s.Fail(s.before, homelabv1.ConditionRestored, homelabv1.ReasonAPINotAvailable,
			"the cluster does not serve the backup API (backup.josie.cloud/v1alpha1 Backups and BackupStores): nothing to restore from")
		return ctrl.Result{}, nil
	}
	if s.password == "" {
		s.wait(homelabv1.ConditionRestored, "waiting for the database")
		return ctrl.Result{}, nil
	}
	src, err := restoresource.Resolve(ctx, r.Client, db.Namespace, backupv1.SourcePostgresDatabase, db.Spec.Restore,
		restoresource.WithAPIReader(r.APIReader))
	var refusal *restoresource.Refusal
	switch {
	case errors.As(err, &refusal) && refusal.Wait:
		s.Set(homelabv1.ConditionRestored, metav1.ConditionFalse, refusal.Reason, refusal.Message)
		return ctrl.Result{RequeueAfter: RestoreWaitRecheck}, nil
	case errors.As(err, &refusal):
		s.Fail(s.before, homelabv1.ConditionRestored, refusal.Reason, refusal.Message)
		return ctrl.Result{}, nil
	case err != nil:
		s.wait(homelabv1.ConditionRestored, "the restore source could not be read: "+err.Error())
		return ctrl.Result{}, err
	}

	job := &batchv1.Job{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: jobs.RestoreName(db)}, job); {
	case apierrors.IsNotFound(err):
		return r.startRestore(ctx, s, src)
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(job, db):
		s.Fail(s.before, homelabv1.ConditionRestored, homelabv1.ReasonNameConflict, fmt.Sprintf("Job %s is not this PostgresDatabase's", job.Name))
		return ctrl.Result{}, nil
	}
	switch jobState(job) {
	case batchv1.JobComplete:
		// The Job's completion is the time: a reconcile that sees the Job again before the cache has the
		// status written now computes the same status (no second write, no second event).
		s.restoredFrom = src.RestoredFrom(jobCompletion(job))
		s.Set(homelabv1.ConditionRestored, metav1.ConditionTrue, homelabv1.ReasonRestored, restoredMessage(s.restoredFrom))
		if reconcile.Changed(s.before, homelabv1.ConditionRestored, metav1.ConditionTrue, homelabv1.ReasonRestored) {
			s.Normal(EventRestored, restoredMessage(s.restoredFrom))
		}
		// Once more, soon, to delete the Job when the status says restored.
		return ctrl.Result{RequeueAfter: restoreCleanupDelay}, nil
	case batchv1.JobFailed:
		msg := fmt.Sprintf("Job %s failed: the database is unusable and nothing is retried (delete the PostgresDatabase and create it again)", job.Name)
		if words := r.restoreLastWords(ctx, job); words != "" {
			msg += ": " + words
		}
		s.Fail(s.before, homelabv1.ConditionRestored, homelabv1.ReasonRestoreFailed, msg)
		return ctrl.Result{}, nil
	}
	// Running: keep its credentials Secret current (a password made again lives there).
	if res, err := r.applyRestoreSecret(ctx, s, job); err != nil || res.RequeueAfter != 0 {
		return res, err
	}
	s.Set(homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonRestoring,
		fmt.Sprintf("Job %s is restoring %s/%s of BackupStore %s", job.Name, src.SourceName, src.ID, src.Store.Name))
	return ctrl.Result{}, nil
}

// startRestore checks that the database holds no table (a database kept by reclaimPolicy Retain and taken
// up again is never written into), chooses pg_restore's image from the server's major version, and
// applies the store file, the Job and its credentials Secret.
func (r *PostgresDatabaseReconciler) startRestore(ctx context.Context, s *databaseScope, src *restoresource.Source) (ctrl.Result, error) {
	operatorImage := r.own.Get(ctx)
	if operatorImage == "" {
		s.Set(homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonOperatorImageUnknown,
			"the operator does not know its own image, which the restore Job's init container runs: RELATED_IMAGE_OPERATOR is unset and its own pod (POD_NAMESPACE, POD_NAME) could not be read")
		return ctrl.Result{RequeueAfter: RestoreWaitRecheck}, nil
	}
	tables, major, err := inspectTarget(ctx, s.settings.As(s.name, s.password, s.name))
	if err != nil {
		s.wait(homelabv1.ConditionRestored, "the new database could not be inspected: "+err.Error())
		return ctrl.Result{RequeueAfter: RestoreWaitRecheck}, nil
	}
	if len(tables) > 0 {
		s.Fail(s.before, homelabv1.ConditionRestored, homelabv1.ReasonTargetNotEmpty,
			fmt.Sprintf("database %s already holds %d tables (%s...): a restore never writes into a database with content", s.name, len(tables), tables[0]))
		return ctrl.Result{}, nil
	}
	akid, sak, ca := jobs.StoreKeys(src.Store)
	in := jobs.RestoreInput{Store: src.Store, AccessKeyIDKey: akid, SecretAccessKeyKey: sak, CAKey: ca,
		CredentialsSecret: jobs.RestoreSecretName(s.db), SourceName: src.SourceName, ID: src.ID,
		OperatorImage: operatorImage, PostgresImage: jobs.PostgresImage(r.PostgresImage, major)}
	cm, err := jobs.RestoreConfigMap(s.db, in)
	if err != nil {
		return ctrl.Result{}, err
	}
	if applied, res, err := s.Apply(ctx, cm, homelabv1.ConditionRestored); !applied {
		return res, err
	}
	job := jobs.RestoreJob(s.db, in)
	if applied, res, err := s.Apply(ctx, job, homelabv1.ConditionRestored); !applied {
		return res, err
	}
	if res, err := r.applyRestoreSecret(ctx, s, job); err != nil || res.RequeueAfter != 0 {
		return res, err
	}
	s.Set(homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonRestoring,
		fmt.Sprintf("Job %s is restoring %s/%s of BackupStore %s (image %s)", job.Name, src.SourceName, src.ID, src.Store.Name, in.PostgresImage))
	return ctrl.Result{}, nil
}

// applyRestoreSecret writes the role's credentials to the restore's Secret, controlled by the live Job.
func (r *PostgresDatabaseReconciler) applyRestoreSecret(ctx context.Context, s *databaseScope, job *batchv1.Job) (ctrl.Result, error) {
	creds := jobs.RestoreSecret(s.db, job, postgres.Secret(s.db, postgresDatabaseKind, *s.settings, s.name, s.password, s.rotation))
	if s.secretLive != nil && jobs.IsRestoreSecret(s.db, s.secretLive) && secretHolds(s.secretLive, creds) {
		return ctrl.Result{}, nil
	}
	result, err := r.applier.Apply(ctx, job, creds)
	if err != nil {
		return s.ApplyFailed(homelabv1.ConditionRestored, creds, err, reconcile.Refusal{})
	}
	_ = result
	return ctrl.Result{}, nil
}

// deleteRestoreJob deletes db's restore Job, if there is one of db's, with its pods and (its dependents
// by garbage collection) the credentials Secret and nothing else.
func (r *PostgresDatabaseReconciler) deleteRestoreJob(ctx context.Context, db *homelabv1.PostgresDatabase) error {
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: jobs.RestoreName(db)}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(job, db) || !job.DeletionTimestamp.IsZero() {
		return nil
	}
	err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: ptr.To(job.UID)})
	return client.IgnoreNotFound(err)
}

// restoreLastWords is the message of the restore's result (the program's JSON line in the container's
// termination message), or the end of the failed container's log; "" when there is none.
func (r *PostgresDatabaseReconciler) restoreLastWords(ctx context.Context, job *batchv1.Job) string {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return ""
	}
	name, msg := jobs.FailedTermination(pods.Items)
	if name == "" {
		return ""
	}
	msg = strings.TrimSpace(msg)
	var res backup.VerifyResult
	if json.Unmarshal([]byte(msg), &res) == nil && res.Reason != "" {
		msg = res.Reason + ": " + res.Message
	}
	return name + ": " + jobs.Tail(msg, lastWordsLimit)
}

// inspectTarget connects as the database's own role and returns the database's user tables and the
// server's major version.
func inspectTarget(ctx context.Context, login postgres.Settings) ([]string, int, error) {
	cfg, err := login.ConnConfig()
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, 0, redacted(err, login.Password)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		return nil, 0, err
	}
	tables, err := backup.UserTables(ctx, conn)
	return tables, num / 10000, err
}

// redacted is err without secret in its text.
func redacted(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), secret, "[redacted]"))
}

// jobCompletion is when the Job completed: its completionTime, else its Complete condition's transition.
func jobCompletion(job *batchv1.Job) metav1.Time {
	if job.Status.CompletionTime != nil {
		return *job.Status.CompletionTime
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete {
			return c.LastTransitionTime
		}
	}
	return job.CreationTimestamp
}

// jobState is the Job's final condition (Complete or Failed), or "" while it runs.
func jobState(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

func restoredMessage(f *backupv1.RestoredFrom) string {
	what := fmt.Sprintf("%s/%s of BackupStore %s", f.SourceName, f.ID, f.Store)
	if f.Backup != "" {
		what = fmt.Sprintf("Backup %s (%s)", f.Backup, what)
	}
	return "restored from " + what
}
