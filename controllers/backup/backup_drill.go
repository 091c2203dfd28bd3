package backup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// A SojuBouncer drill's scratch database is made on a scratch PostgresConnection (server-side apply), deleted after.
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresconnections,verbs=get;list;watch;create;patch;delete

// Timing of restore drills.
const (
	// DrillStartTimeout bounds the wait from a drill's start until its Job runs: the scratch
	// PostgresDatabase Ready with its Secret, the store Ready, the operator's image known. Past it the drill
	// is Failed, so a drill that cannot start never holds its Backup from pruning (retention keeps a
	// Backup whose drill is Running).
	DrillStartTimeout = 10 * time.Minute
	// drillRecheck is how often a drill that waits looks again, besides the watches on its children.
	drillRecheck = 30 * time.Second
	// drillStartDelay is when a Backup that just Completed with spec.verify is looked at again for its drill
	// (its own status write sends it no event).
	drillStartDelay = time.Second
	// drillCleanupDelay is when a drill that just ended is looked at again, to delete its children once
	// its result is written.
	drillCleanupDelay = 5 * time.Second
	// verificationMessageLimit is status.verification.message's maxLength.
	verificationMessageLimit = 4096
)

// Event reasons of drills.
const (
	eventDrillStarted  = "DrillStarted"
	eventDrillVerified = "DrillVerified"
	eventDrillFailed   = "DrillFailed"
)

// drillDue says whether a Backup's drill is to run or is running: the backup is Completed, spec.verify
// asks for a drill, and none has ended yet (a drill is run once per Backup).
func drillDue(b *backupv1.Backup) bool {
	v := b.Status.Verification
	return b.Status.Phase == backupv1.BackupCompleted && b.Spec.Verify && (v == nil || v.Result == backupv1.VerificationRunning)
}

// reconcileDrill takes a Completed Backup's restore drill a step further, and writes its part of the
// status (verification and the Verified condition) under its own field owner. A drill whose result is
// already written only has its children deleted.
//
// The steps: a scratch PostgresDatabase on the source's server (Backup-controlled, reclaimPolicy
// Delete); once it is Ready, the drill Job running `backup verify` into it as its own role; once the Job
// ended, its result line read from the container's termination message into status.verification; then,
// once that status is written, the Job and the scratch PostgresDatabase deleted (its controller drops the
// database and role). Nothing of the same name that is not the Backup's is adopted or touched.
func (r *backupReconciler) reconcileDrill(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	if !drillDue(s.b) {
		if v := s.b.Status.Verification; v == nil || v.Result == backupv1.VerificationRunning {
			return ctrl.Result{}, nil // no drill asked for
		}
		return r.cleanupDrill(ctx, s)
	}
	if s.status.Verification == nil {
		s.status.Verification = &backupv1.BackupVerification{Result: backupv1.VerificationRunning}
	}
	res, err := r.drill(ctx, s)
	if werr := r.drillStatus.Write(ctx, s.b, s.status); werr != nil {
		err = errors.Join(err, werr)
	}
	return res, err
}

// drill finds where the drill is and starts its next part: the Job when it exists, else the scratch
// database and, once that is Ready, the Job.
func (r *backupReconciler) drill(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	b := s.b
	switch b.Spec.Source.Kind {
	case backupv1.SourcePostgresDatabase, backupv1.SourceSojuBouncer, backupv1.SourceErgoNetwork:
	default:
		// The API's enum refuses this; a Backup of a kind this operator version does not know ends here.
		r.endDrill(s, false, backupv1.ReasonInvalid, fmt.Sprintf("restore drills of %s backups are not built", b.Spec.Source.Kind), nil, r.now())
		return ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
	}
	name := jobs.DrillName(b)
	job := &batchv1.Job{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, job); {
	case apierrors.IsNotFound(err):
		job = nil
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(job, b):
		r.endDrill(s, false, reconcile.ReasonNameConflict, fmt.Sprintf("Job %s exists and is not this Backup's; it is left untouched", name), nil, r.now())
		return ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
	}
	if job != nil {
		r.startedAt(s, job.CreationTimestamp)
		switch jobs.Finished(job) {
		case batchv1.JobComplete, batchv1.JobFailed:
			r.drillResult(ctx, s, job)
			return ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
		}
		s.Set(backupv1.ConditionVerified, metav1.ConditionUnknown, backupv1.ReasonDrilling, drillingMessage(b, job.Name, ""))
		return ctrl.Result{}, nil
	}
	if b.Spec.Source.Kind == backupv1.SourceErgoNetwork {
		// A datastore is restored by opening it: no scratch object, the Job's own emptyDir.
		return r.startDrillJob(ctx, s, nil)
	}

	scratch, res, err := r.scratchDatabase(ctx, s)
	if scratch == nil {
		return res, err
	}
	ready := meta.FindStatusCondition(scratch.Status.Conditions, reconcile.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != scratch.Generation || scratch.Status.SecretName == "" {
		msg := fmt.Sprintf("waiting for the scratch PostgresDatabase %s to be Ready", scratch.Name)
		if ready != nil && ready.Status == metav1.ConditionFalse {
			msg += fmt.Sprintf(" (%s: %s)", ready.Reason, ready.Message)
		}
		return r.waitDrill(s, backupv1.ReasonScratchNotReady, msg), nil
	}
	return r.startDrillJob(ctx, s, scratch)
}

// scratchDatabase finds or makes the drill's scratch PostgresDatabase; nil when the drill cannot go on
// this time (the result says when to look again; the drill may have ended).
func (r *backupReconciler) scratchDatabase(ctx context.Context, s *backupScope) (*homelabv1.PostgresDatabase, ctrl.Result, error) {
	b := s.b
	name := jobs.DrillName(b)
	scratch := &homelabv1.PostgresDatabase{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, scratch); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, ctrl.Result{}, err
	case !metav1.IsControlledBy(scratch, b):
		r.endDrill(s, false, reconcile.ReasonNameConflict,
			fmt.Sprintf("PostgresDatabase %s exists and is not this Backup's scratch database; it is left untouched", name), nil, r.now())
		return nil, ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
	default:
		r.startedAt(s, scratch.CreationTimestamp)
		if b.Spec.Source.Kind != backupv1.SourceSojuBouncer {
			return scratch, ctrl.Result{}, nil
		}
		// A bouncer's scratch connection is applied until the drill ends, like the database.
		_, adminSecret, ended, err := r.scratchServer(ctx, s)
		switch {
		case err != nil:
			return nil, ctrl.Result{}, err
		case ended || !r.scratchConnection(ctx, s, scratch, adminSecret):
			return nil, ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
		}
		return scratch, ctrl.Result{}, nil
	}
	// The scratch database lives on the source's server: the server a restore would use.
	connection, adminSecret, ended, err := r.scratchServer(ctx, s)
	if err != nil || ended {
		if ended {
			return nil, ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
		}
		return nil, ctrl.Result{}, err
	}
	scratch = jobs.ScratchDatabaseOn(b, connection)
	result, err := r.applier.Apply(ctx, b, scratch)
	var conflict *apply.ConflictError
	switch {
	case errors.As(err, &conflict):
		r.endDrill(s, false, reconcile.ReasonNameConflict, conflict.Error(), nil, r.now())
		return nil, ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		r.endDrill(s, false, backupv1.ReasonScratchNotReady, "the scratch PostgresDatabase was refused: "+err.Error(), nil, r.now())
		return nil, ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
	case err != nil:
		return nil, ctrl.Result{}, err
	}
	r.startedAt(s, scratch.CreationTimestamp)
	if result == apply.Created {
		s.Normalf(eventDrillStarted, "Restore drill of %s started: created the scratch PostgresDatabase %s on connection %s (reclaimPolicy Delete)",
			b.Status.ID, scratch.Name, scratch.Spec.Connection)
	}
	if adminSecret != "" {
		if ok := r.scratchConnection(ctx, s, scratch, adminSecret); !ok {
			return nil, ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
		}
	}
	return scratch, ctrl.Result{}, nil
}

// scratchServer says where a drill's scratch database is made: a PostgresDatabase source's connection, or,
// for a SojuBouncer, a scratch PostgresConnection of the drill's own name on the admin Secret the bouncer
// names (adminSecret). ended says the drill ended (its result set) because the server is not known.
func (r *backupReconciler) scratchServer(ctx context.Context, s *backupScope) (connection, adminSecret string, ended bool, err error) {
	b := s.b
	gone := func(kind string) (string, string, bool, error) {
		r.endDrill(s, false, backupv1.ReasonScratchNotReady, fmt.Sprintf(
			"the source %s %q no longer exists: the drill's scratch database is made on the source's server, which is not known without it (restore the backup into a new %s with spec.restore to test it)",
			kind, b.Spec.Source.Name, kind), nil, r.now())
		return "", "", true, nil
	}
	key := client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Source.Name}
	if b.Spec.Source.Kind == backupv1.SourcePostgresDatabase {
		source := &homelabv1.PostgresDatabase{}
		if err := r.Client.Get(ctx, key, source); err != nil {
			if !apierrors.IsNotFound(err) {
				return "", "", false, err
			}
			return gone("PostgresDatabase")
		}
		return source.Spec.Connection, "", false, nil
	}
	bouncer := &ircv1.SojuBouncer{}
	if err := r.Client.Get(ctx, key, bouncer); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", "", false, err
		}
		return gone("SojuBouncer")
	}
	if bouncer.Spec.Database.AdminSecretName == "" {
		// The operator-wide admin connection (--soju-database-secret) lives in the operator's namespace and
		// serves only the namespaces its owner listed: a scratch connection in this namespace cannot name
		// it, and the drill does not make databases with a login the namespace cannot read.
		r.endDrill(s, false, backupv1.ReasonScratchNotReady, fmt.Sprintf(
			"SojuBouncer %q uses the operator-wide admin connection (--soju-database-secret): a drill makes its scratch database with the admin Secret the bouncer names in spec.database.adminSecretName, in this namespace; set it to drill this bouncer's backups",
			bouncer.Name), nil, r.now())
		return "", "", true, nil
	}
	return jobs.DrillName(b), bouncer.Spec.Database.AdminSecretName, false, nil
}

// scratchConnection applies a SojuBouncer drill's scratch PostgresConnection, controlled by the scratch
// database; false when the drill ended (a name taken).
func (r *backupReconciler) scratchConnection(ctx context.Context, s *backupScope, scratch *homelabv1.PostgresDatabase, adminSecret string) bool {
	conn := jobs.ScratchConnection(s.b, scratch, adminSecret)
	scratch.SetGroupVersionKind(homelabv1.GroupVersion.WithKind("PostgresDatabase"))
	result, err := r.applier.Apply(ctx, scratch, conn)
	var conflict *apply.ConflictError
	switch {
	case errors.As(err, &conflict):
		r.endDrill(s, false, reconcile.ReasonNameConflict, conflict.Error(), nil, r.now())
		return false
	case err != nil:
		// Retried until the start timeout, which ends the drill.
		ctrl.LoggerFrom(ctx).Error(err, "apply the drill's scratch PostgresConnection", "name", conn.Name)
		r.waitDrill(s, reconcile.ReasonApplyFailed, "the scratch PostgresConnection could not be applied: "+err.Error())
		return false
	case result == apply.Created:
		s.Normalf(reconcile.EventCreated, "Created the scratch PostgresConnection %s on the bouncer's admin Secret %s for the restore drill of %s",
			conn.Name, adminSecret, s.b.Status.ID)
	}
	return true
}

// drillingMessage is the Verified condition's message while the drill Job runs.
func drillingMessage(b *backupv1.Backup, job, image string) string {
	var msg string
	if b.Spec.Source.Kind == backupv1.SourceErgoNetwork {
		msg = fmt.Sprintf("Job %s is downloading %s and opening it with buntdb", job, b.Status.ID)
	} else {
		msg = fmt.Sprintf("Job %s is restoring %s into PostgresDatabase %s", job, b.Status.ID, jobs.DrillName(b))
	}
	if image != "" {
		msg += " (image " + image + ")"
	}
	return msg
}

// startDrillJob applies the Backup's store file again (the store's current description) and the drill
// Job, in the postgres image for the scratch server's major version (or the dump's, when newer).
func (r *backupReconciler) startDrillJob(ctx context.Context, s *backupScope, scratch *homelabv1.PostgresDatabase) (ctrl.Result, error) {
	b := s.b
	operatorImage := r.own.Get(ctx)
	if operatorImage == "" {
		return r.waitDrill(s, reasonImageUnknown,
			"the operator does not know its own image, which the drill Job runs: RELATED_IMAGE_OPERATOR is unset and its own pod (POD_NAMESPACE, POD_NAME) could not be read"), nil
	}
	store := &backupv1.BackupStore{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Store}, store); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return r.waitDrill(s, backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q does not exist", b.Spec.Store)), nil
	}
	if !meta.IsStatusConditionTrue(store.Status.Conditions, reconcile.ConditionReady) {
		return r.waitDrill(s, backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q is not Ready", store.Name)), nil
	}
	in := jobs.DrillInput{Store: store, AccessKeyIDKey: accessKeyIDKey(store), SecretAccessKeyKey: secretAccessKeyKey(store),
		CAKey: caKey(store), OperatorImage: operatorImage}
	var job *batchv1.Job
	if scratch == nil {
		// A datastore drill: the operator's own image, nothing else to resolve.
		job = r.bounded(jobs.DatastoreDrillJob(b, in))
	} else {
		var secret corev1.Secret
		if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: scratch.Status.SecretName}, &secret); err != nil {
			if !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
			return r.waitDrill(s, backupv1.ReasonScratchNotReady, fmt.Sprintf("Secret %q of the scratch database does not exist", scratch.Status.SecretName)), nil
		}
		url := string(secret.Data[jobs.DatabaseURLKey])
		if url == "" {
			return r.waitDrill(s, backupv1.ReasonScratchNotReady, fmt.Sprintf("Secret %q of the scratch database has no key %s", secret.Name, jobs.DatabaseURLKey)), nil
		}
		major, err := r.ServerMajor(ctx, url)
		if err != nil {
			return r.waitDrill(s, backupv1.ReasonScratchNotReady, "the scratch database's server did not tell its version: "+redactURL(err.Error(), url)), nil
		}
		in.ScratchSecret = secret.Name
		in.PostgresImage = jobs.PostgresImage(r.PostgresImage, jobs.DrillMajor(major, b.Status.ToolVersion))
		job = r.bounded(jobs.DrillJob(b, in))
	}
	cm, err := jobs.StoreConfigMap(b, jobs.Input{Store: store})
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, obj := range []client.Object{cm, job} {
		result, err := r.applier.Apply(ctx, b, obj)
		var conflict *apply.ConflictError
		switch {
		case errors.As(err, &conflict):
			r.endDrill(s, false, reconcile.ReasonNameConflict, conflict.Error(), nil, r.now())
			return ctrl.Result{RequeueAfter: drillCleanupDelay}, nil
		case err != nil:
			// Retried until the start timeout, which ends the drill: never Running for ever.
			ctrl.LoggerFrom(ctx).Error(err, "apply a drill child", "name", obj.GetName())
			return r.waitDrill(s, reconcile.ReasonApplyFailed, err.Error()), nil
		case result == apply.Created && obj == job && scratch == nil:
			s.Normalf(eventDrillStarted, "Restore drill of %s started: created Job %s, which downloads the artifact and opens it with buntdb (no scratch object)",
				b.Status.ID, job.Name)
		case result == apply.Created:
			s.Normalf(reconcile.EventCreated, "Created %s %s for the restore drill of %s",
				obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), b.Status.ID)
		}
	}
	r.startedAt(s, job.CreationTimestamp)
	s.Set(backupv1.ConditionVerified, metav1.ConditionUnknown, backupv1.ReasonDrilling,
		drillingMessage(b, job.Name, job.Spec.Template.Spec.Containers[0].Image))
	return ctrl.Result{}, nil
}

// drillResult reads how the drill Job ended: the program's result line, which it writes to the
// termination log on success and failure alike; without one (the program never ran, or died), the failed
// container's last words.
func (r *backupReconciler) drillResult(ctx context.Context, s *backupScope, job *batchv1.Job) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the drill Job's pods", "job", job.Name)
	}
	at := jobEnd(job)
	_, msg, ok := jobs.Termination(pods.Items, jobs.ContainerDrill)
	res, parsed := jobs.ParseResult(msg)
	parsed = ok && parsed
	var recovery *metav1.Duration
	if parsed && res.RecoverySeconds > 0 {
		recovery = &metav1.Duration{Duration: time.Duration(res.RecoverySeconds * float64(time.Second))}
	}
	complete := jobs.Finished(job) == batchv1.JobComplete
	switch {
	case parsed && complete && res.Result == backup.ResultVerified:
		r.endDrill(s, true, backupv1.ReasonRestored, res.Message, recovery, at)
	case parsed && res.Result != backup.ResultVerified:
		r.endDrill(s, false, res.Reason, res.Message, recovery, at)
	case complete:
		r.endDrill(s, false, backupv1.ReasonJobFailed, fmt.Sprintf("Job %s succeeded without a result line in its termination message", job.Name), nil, at)
	default:
		why := fmt.Sprintf("Job %s failed", job.Name)
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason != "" {
				why += " (" + c.Reason + ")"
			}
		}
		if name, words := jobs.FailedTermination(pods.Items); name != "" {
			why += ": " + name + ": " + jobs.Tail(words, lastWordsLimit)
		}
		r.endDrill(s, false, backupv1.ReasonJobFailed, why, nil, at)
	}
}

// endDrill records a drill's end: status.verification and the Verified condition, and an event.
func (r *backupReconciler) endDrill(s *backupScope, verified bool, reason, msg string, recovery *metav1.Duration, at metav1.Time) {
	v := s.status.Verification
	if v.StartTime == nil {
		v.StartTime = &at
	}
	v.Result, v.CompletionTime, v.RecoveryTime = backupv1.VerificationFailed, &at, recovery
	v.Message = truncate(reason+": "+msg, verificationMessageLimit)
	if verified {
		v.Result = backupv1.VerificationVerified
		v.Message = truncate(msg, verificationMessageLimit)
		s.Set(backupv1.ConditionVerified, metav1.ConditionTrue, backupv1.ReasonRestored, v.Message)
		s.Normalf(eventDrillVerified, "Restore drill of %s Verified: %s", s.b.Status.ID, v.Message)
		return
	}
	if !validReason(reason) {
		reason = backupv1.ReasonJobFailed
	}
	s.Set(backupv1.ConditionVerified, metav1.ConditionFalse, reason, v.Message)
	s.Warnf(eventDrillFailed, "Restore drill of %s Failed: %s", s.b.Status.ID, v.Message)
}

// waitDrill records a drill that waits for something to start its Job, and ends it Failed once it waited
// DrillStartTimeout since its start.
func (r *backupReconciler) waitDrill(s *backupScope, reason, msg string) ctrl.Result {
	v := s.status.Verification
	now := r.now()
	if v.StartTime == nil {
		v.StartTime = &now
	}
	left := DrillStartTimeout - now.Sub(v.StartTime.Time)
	if left <= 0 {
		r.endDrill(s, false, reason, fmt.Sprintf("%s; the drill did not start within %s", msg, DrillStartTimeout), nil, now)
		return ctrl.Result{RequeueAfter: drillCleanupDelay}
	}
	s.Set(backupv1.ConditionVerified, metav1.ConditionUnknown, backupv1.ReasonDrilling, msg)
	return ctrl.Result{RequeueAfter: min(drillRecheck, left)}
}

// startedAt records the drill's start as its first child's creation, so that a reconcile that read the
// Backup before its start was written computes the same start.
func (r *backupReconciler) startedAt(s *backupScope, t metav1.Time) {
	if v := s.status.Verification; v.StartTime == nil && !t.IsZero() {
		v.StartTime = &t
	}
}

// cleanupDrill deletes an ended drill's Job (with its pods) and scratch PostgresDatabase (whose controller
// drops the database and role), when they are the Backup's; then, once that database is gone, a
// SojuBouncer drill's scratch PostgresConnection (which the garbage collector would also delete, being the
// database's): never before, since the database's cleanup goes through it. Its result stays in the
// status. The result says when to look again while the connection waits for the database.
func (r *backupReconciler) cleanupDrill(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	name := jobs.DrillName(s.b)
	var errs []error
	var res ctrl.Result
	databaseGone := false
	for _, obj := range []client.Object{&batchv1.Job{}, &homelabv1.PostgresDatabase{}, &homelabv1.PostgresConnection{}} {
		conn, isConn := obj.(*homelabv1.PostgresConnection)
		if isConn && !databaseGone {
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.b.Namespace, Name: name}, conn); err == nil && drillChild(conn, s.b) {
				res.RequeueAfter = drillCleanupDelay // the database's deletion (watched) or this wakes the Backup
			}
			continue
		}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.b.Namespace, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			if _, ok := obj.(*homelabv1.PostgresDatabase); ok {
				databaseGone = true
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !drillChild(obj, s.b) || !obj.GetDeletionTimestamp().IsZero() {
			continue // someone else's (never touched), or already going
		}
		err = r.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: ptr.To(obj.GetUID())})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		kind := "Job"
		switch obj.(type) {
		case *homelabv1.PostgresDatabase:
			kind = "PostgresDatabase"
		case *homelabv1.PostgresConnection:
			kind = "PostgresConnection"
		}
		s.Normalf(reconcile.EventDeleted, "Deleted the restore drill's %s %s; the result stays in status.verification", kind, name)
	}
	return res, errors.Join(errs...)
}

// drillChild says whether obj is one of b's drill children: controlled by b, or (a SojuBouncer drill's
// scratch PostgresConnection) by b's scratch PostgresDatabase, labelled as b's drill.
func drillChild(obj client.Object, b *backupv1.Backup) bool {
	if metav1.IsControlledBy(obj, b) {
		return true
	}
	if _, ok := obj.(*homelabv1.PostgresConnection); !ok {
		return false
	}
	c := metav1.GetControllerOf(obj)
	return c != nil && c.Kind == "PostgresDatabase" && c.Name == jobs.DrillName(b) && obj.GetLabels()[backupv1.LabelDrillOf] == b.Name
}

// jobEnd is when a Job ended: its completionTime, else its final condition's transition, else (a Job
// marked ended without either) its creation.
func jobEnd(job *batchv1.Job) metav1.Time {
	if job.Status.CompletionTime != nil {
		return *job.Status.CompletionTime
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime
		}
	}
	return job.CreationTimestamp
}

// now is the reconciler's clock as an API time, to the second (as the API server stores it), so that a
// time computed twice compares equal.
func (r *backupReconciler) now() metav1.Time {
	return metav1.NewTime(r.Now().Truncate(time.Second))
}

// truncate cuts msg to limit bytes, on a rune boundary, marked with "..." when cut.
func truncate(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	return strings.ToValidUTF8(msg[:limit-3], "") + "..."
}

// validReason says whether reason can be a condition's reason (CamelCase, as the program's reasons are):
// the program's output is not trusted to be one.
func validReason(reason string) bool {
	if reason == "" || len(reason) > 1024 || strings.HasSuffix(reason, ",") || strings.HasSuffix(reason, ":") {
		return false
	}
	for i, c := range reason {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case (c >= '0' && c <= '9') || c == '_' || c == ',' || c == ':':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}
