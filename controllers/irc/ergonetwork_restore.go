package irc

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/restoresource"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The restore's timing (docs/backup.md, "Restoring an ErgoNetwork").
const (
	// ErgoRestoreWaitRecheck is how often a restore that waits for its Backup, its store or the operator's
	// image looks again, besides the watches on Backups and BackupStores.
	ErgoRestoreWaitRecheck = time.Minute
	// ergoRestoreCleanupDelay is when a restore that just succeeded is looked at again, to delete its Job.
	ergoRestoreCleanupDelay = 5 * time.Second
	// ergoLastWordsLimit bounds the failed container's message kept in the condition.
	ergoLastWordsLimit = 1024
)

// The restore Job's and the last backup's reads.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backups;backupstores,verbs=get;list;watch

// ergoRestorePending says whether n asks for a restore that has not succeeded yet: until it has, ergo does
// not start on the claim.
// ergoRestores is the ErgoNetwork kind as restoresource.Watch reads it.
var ergoRestores = restoresource.Kind{Source: backupv1.SourceErgoNetwork,
	NewList: func() client.ObjectList { return &ircv1.ErgoNetworkList{} },
	Pending: func(o client.Object) bool { return ergoRestorePending(o.(*ircv1.ErgoNetwork)) }}

func ergoRestorePending(n *ircv1.ErgoNetwork) bool {
	return n.Spec.Restore != nil && n.Status.RestoredFrom == nil
}

// reconcileRestore fills the new network's claim from spec.restore's backup before ergo starts: the Job
// runs `backup restore --target-file` on the claim as ergo's user, which writes ircd.db only when the
// artifact's checksum matched and buntdb opened it, and never over a datastore already there. On success
// status.restoredFrom is set (and reconcileDeployment starts ergo); on failure Restored is False with the
// program's last words and nothing is retried.
func (r *ErgoNetworkReconciler) reconcileRestore(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	n := s.net
	if n.Spec.Restore == nil {
		s.Drop(backupv1.ConditionRestored)
		return ctrl.Result{}, nil
	}
	if n.Status.RestoredFrom != nil {
		s.Set(backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored, ergoRestoredMessage((*backupv1.RestoredFrom)(n.Status.RestoredFrom)))
		// The Job is done with: it goes once the status that says so is written.
		return ctrl.Result{}, jobs.DeleteControlled(ctx, r.Client, n, jobs.DatastoreRestoreName(n.Name))
	}
	if c := meta.FindStatusCondition(s.Before, backupv1.ConditionRestored); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == backupv1.ReasonRestoreFailed || c.Reason == backupv1.ReasonTargetNotEmpty || c.Reason == backupv1.ReasonWrongKind) {
		// Final: only a new ErgoNetwork tries again.
		s.Set(backupv1.ConditionRestored, c.Status, c.Reason, c.Message)
		return ctrl.Result{}, nil
	}
	if !r.Capabilities.Backups {
		// Nothing is watched or cached of the backup API here: installing it takes an operator restart.
		s.Fail(backupv1.ConditionRestored, ircv1.ReasonAPINotAvailable,
			"the cluster does not serve the backup API (backup.josie.cloud/v1alpha1 Backups and BackupStores): nothing to restore from, and ergo does not start on an empty claim")
		return ctrl.Result{}, nil
	}

	job := &batchv1.Job{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: jobs.DatastoreRestoreName(n.Name)}, job)
	switch {
	case apierrors.IsNotFound(err):
		job = nil
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(job, n):
		s.Fail(backupv1.ConditionRestored, ircv1.ReasonNameConflict, fmt.Sprintf("Job %s is not this ErgoNetwork's", job.Name))
		return ctrl.Result{}, nil
	}
	if job == nil {
		// spec.restore added to a network that already runs (the API refuses only a change of it): its
		// claim is live, and a restore never writes into a live network's datastore.
		if live, err := r.liveDeployment(ctx, s); err != nil {
			return ctrl.Result{}, err
		} else if live != nil {
			s.Fail(backupv1.ConditionRestored, backupv1.ReasonTargetNotEmpty, fmt.Sprintf(
				"ergo already runs on claim %s: a restore never writes into a live network's datastore (spec.restore is for a new ErgoNetwork)", ergo.PVCName(n)))
			return ctrl.Result{}, nil
		}
	}

	src, err := restoresource.Resolve(ctx, r.Client, n.Namespace, backupv1.SourceErgoNetwork, (*backupv1.RestoreSource)(n.Spec.Restore),
		restoresource.WithAPIReader(r.APIReader))
	var refusal *restoresource.Refusal
	switch {
	case errors.As(err, &refusal) && refusal.Wait:
		s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, refusal.Reason, refusal.Message)
		return ctrl.Result{RequeueAfter: ErgoRestoreWaitRecheck}, nil
	case errors.As(err, &refusal):
		s.Fail(backupv1.ConditionRestored, refusal.Reason, refusal.Message)
		return ctrl.Result{}, nil
	case err != nil:
		s.Set(backupv1.ConditionRestored, metav1.ConditionUnknown, ircv1.ReasonWaiting, "the restore source could not be read: "+err.Error())
		return ctrl.Result{}, err
	}
	if job == nil {
		return r.startRestore(ctx, s, src)
	}

	switch jobs.Finished(job) {
	case batchv1.JobComplete:
		// The Job's completion is the time: a reconcile that sees the Job again before the cache has the
		// status written now computes the same status (no second write, no second event).
		s.status.RestoredFrom = (*ircv1.RestoredFrom)(src.RestoredFrom(jobs.CompletionTime(job)))
		msg := ergoRestoredMessage((*backupv1.RestoredFrom)(s.status.RestoredFrom))
		s.Set(backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored, msg)
		if reconcile.Changed(s.Before, backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored) {
			s.Normal(backupv1.ReasonRestored, msg+": ergo starts on it")
		}
		// Once more, soon, to delete the Job when the status says restored.
		return ctrl.Result{RequeueAfter: ergoRestoreCleanupDelay}, nil
	case batchv1.JobFailed:
		reason, words := jobs.LastWords(ctx, r.APIReader, job, ergoLastWordsLimit)
		if reason == backup.ReasonTargetNotEmpty {
			s.Fail(backupv1.ConditionRestored, backupv1.ReasonTargetNotEmpty, fmt.Sprintf(
				"claim %s already holds a datastore (kept from an earlier network?): a restore never writes over one, and nothing is retried: %s", ergo.PVCName(n), words))
			return ctrl.Result{}, nil
		}
		msg := fmt.Sprintf("Job %s failed and nothing is retried (delete the ErgoNetwork, and its claim with storage.reclaimPolicy Delete, and create it again)", job.Name)
		if words != "" {
			msg += ": " + words
		}
		s.Fail(backupv1.ConditionRestored, backupv1.ReasonRestoreFailed, msg)
		return ctrl.Result{}, nil
	}
	s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring,
		fmt.Sprintf("Job %s is restoring %s/%s of BackupStore %s into claim %s", job.Name, src.SourceName, src.ID, src.Store.Name, ergo.PVCName(n)))
	return ctrl.Result{}, nil
}

// startRestore applies the restore's store file and Job, once the operator knows its own image.
func (r *ErgoNetworkReconciler) startRestore(ctx context.Context, s *ergoNetworkScope, src *restoresource.Source) (ctrl.Result, error) {
	operatorImage := r.own.Get(ctx)
	if operatorImage == "" {
		s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonOperatorImageUnknown,
			"the operator does not know its own image, which the restore Job runs: RELATED_IMAGE_OPERATOR is unset and its own pod (POD_NAMESPACE, POD_NAME) could not be read")
		return ctrl.Result{RequeueAfter: ErgoRestoreWaitRecheck}, nil
	}
	n := s.net
	akid, sak, ca := jobs.StoreKeys(src.Store)
	in := jobs.DatastoreRestoreInput{Owner: ergo.OwnerReference(n), Namespace: n.Namespace, Name: n.Name,
		Store: src.Store, AccessKeyIDKey: akid, SecretAccessKeyKey: sak, CAKey: ca,
		Kind: backupv1.SourceErgoNetwork, SourceName: src.SourceName, ID: src.ID, OperatorImage: operatorImage,
		ClaimName: ergo.PVCName(n), DataDir: ergo.DataDir, DataFile: ergo.DatastoreFile,
		RunAsUser: ergo.DatastoreUser(r.Capabilities.OpenShift)}
	cm, err := jobs.DatastoreRestoreConfigMap(in)
	if err != nil {
		return ctrl.Result{}, err
	}
	if applied, res, err := s.Apply(ctx, cm, backupv1.ConditionRestored); !applied {
		return res, err
	}
	job := jobs.DatastoreRestoreJob(in)
	if applied, res, err := s.Apply(ctx, job, backupv1.ConditionRestored); !applied {
		return res, err
	}
	s.Normalf(backupv1.ReasonRestoring, "Created Job %s to restore %s/%s of BackupStore %s into claim %s", job.Name, src.SourceName, src.ID, src.Store.Name, in.ClaimName)
	s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring,
		fmt.Sprintf("Job %s is restoring %s/%s of BackupStore %s into claim %s", job.Name, src.SourceName, src.ID, src.Store.Name, in.ClaimName))
	return ctrl.Result{}, nil
}

// observeLastBackup finds the network's newest Completed Backup in the cache, for status.lastBackup
// (docs/backup.md). Without the backup API there is none; a failed read keeps what the status shows.
func (r *ErgoNetworkReconciler) observeLastBackup(ctx context.Context, s *ergoNetworkScope) (ctrl.Result, error) {
	last, err := lastbackup.Observe(ctx, r.Client, r.Capabilities.Backups, backupv1.SourceErgoNetwork, s.net.Namespace, s.net.Name)
	if err != nil {
		return ctrl.Result{}, err // s.status still holds the live fields
	}
	s.status.LastBackupTime, s.status.LastBackup = last.Fields()
	return ctrl.Result{}, nil
}

func ergoRestoredMessage(f *backupv1.RestoredFrom) string {
	what := fmt.Sprintf("%s/%s of BackupStore %s", f.SourceName, f.ID, f.Store)
	if f.Backup != "" {
		what = fmt.Sprintf("Backup %s (%s)", f.Backup, what)
	}
	return "restored from " + what
}
