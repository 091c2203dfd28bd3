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
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/backup/storeaccess"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/ownimage"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// Finalizer and annotation of Backups with artifactPolicy Delete.
const (
	// BackupFinalizer holds a Backup with artifactPolicy Delete until its artifact is deleted from the store.
	BackupFinalizer = "backup.josie.cloud/artifact"
	// ReleaseFinalizerAnnotation set to "true" on a deleted Backup lets it go without deleting its artifact
	// (the store is gone for good): the escape from a finalizer that cannot finish.
	ReleaseFinalizerAnnotation = "backup.josie.cloud/release-finalizer"
	// DefaultReleaseTimeout is how long a deleted Backup waits for its store before the finalizer is
	// released anyway, with a Warning event that names the artifact left behind.
	DefaultReleaseTimeout = 24 * time.Hour
	// DefaultJobDeadline bounds every Job the Backup controller runs (backup, datastore copy, drill) when
	// JobDeadline is zero: --backup-job-deadline's default.
	DefaultJobDeadline = 24 * time.Hour
)

// Event and condition reasons of Backups besides the API's.
const (
	reasonRunning         = "Running"
	reasonSourceReady     = "Ready"
	reasonImageUnknown    = "OperatorImageUnknown"
	reasonArtifactMissing = "ArtifactMissing"
	reasonDeleteFailed    = "ArtifactDeleteFailed"
	reasonDeleted         = "ArtifactDeleted"
	reasonReleased        = "FinalizerReleased"
)

// How soon a Backup is looked at again: one waiting for its store or source (their own watches wake it
// too), one whose artifact could not be read or deleted.
const (
	backupWaitRecheck  = time.Minute
	backupStoreBackoff = 30 * time.Second
	// lastWordsLimit bounds the failed container's last words in a status message.
	lastWordsLimit = 2048
)

// backupParts are the Backup's part conditions.
var backupParts = []string{backupv1.ConditionStore, backupv1.ConditionSource}

// backupReconciler takes each Backup once: it resolves the store and the source, runs a Job that dumps
// the source's database (or copies its datastore file, backup_ergo.go) to the store with the operator's own
// program, and reports the artifact the store holds when the Job ends.
type backupReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Client reads from the manager's cache and writes to the API server; SetupWithManager fills it,
	// APIReader and Recorder when nil.
	Client client.Client
	// APIReader reads Secrets and Pods from the API server.
	APIReader client.Reader
	// Recorder emits events.
	Recorder record.EventRecorder
	// OperatorImage is the operator's own image; PostgresImage pg_dump's image template (Options).
	OperatorImage, PostgresImage string
	// PodNamespace and PodName are the operator's own pod, where its image is read when OperatorImage is
	// empty (Options).
	PodNamespace, PodName string
	// ServerMajor returns the major version of the PostgreSQL server at url (serverMajor when nil).
	ServerMajor func(ctx context.Context, url string) (int, error)
	// ReleaseTimeout is how long a deleted Backup waits for its store (DefaultReleaseTimeout when zero).
	ReleaseTimeout time.Duration
	// JobDeadline is every Job's activeDeadlineSeconds (DefaultJobDeadline when zero): a pod that never
	// starts (an image that cannot be pulled, a node that is gone) or a transfer that hangs ends as a
	// failed Job, and its Backup or drill as Failed, never Running for ever.
	JobDeadline time.Duration
	// OpenShift leaves a datastore Job's uid to the SCC, as the source's own pod does (backup_ergo.go).
	OpenShift bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	own     *ownimage.Resolver
	applier *apply.Applier
	status  *reconcile.StatusWriter
	// drillStatus writes the drill's part of the status (verification, the Verified condition) under a
	// field owner of its own.
	drillStatus *reconcile.StatusWriter
	finalizer   reconcile.Finalizer
}

// backupCache: Backups' Jobs and ConfigMaps are the operator's (labelled); the sources are cached whole
// by their own groups.
func backupCache(platform.Capabilities) []manager.CacheRule {
	return []manager.CacheRule{{Object: &batchv1.Job{}}}
}

// SetupWithManager registers the reconciler and its watches: its Jobs (backup and drill), the namespace's
// stores and sources, and its drills' scratch PostgresDatabases.
func (r *backupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	if r.ServerMajor == nil {
		r.ServerMajor = serverMajor
	}
	if r.ReleaseTimeout == 0 {
		r.ReleaseTimeout = DefaultReleaseTimeout
	}
	if r.JobDeadline == 0 {
		r.JobDeadline = DefaultJobDeadline
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.own = &ownimage.Resolver{Image: r.OperatorImage, Reader: r.APIReader, Namespace: r.PodNamespace, Name: r.PodName}
	r.applier = &apply.Applier{Client: r.Client, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner + "/backup"}
	r.status = &reconcile.StatusWriter{Client: r.Client, FieldOwner: oplabels.FieldOwner + "/backup",
		Fields:     []string{"phase", "id", "startTime", "completionTime", "size", "sha256", "location", "format", "toolVersion"},
		Conditions: append([]string{reconcile.ConditionReady}, backupParts...)}
	r.drillStatus = &reconcile.StatusWriter{Client: r.Client, FieldOwner: oplabels.FieldOwner + "/backup-drill",
		Fields: []string{"verification"}, Conditions: []string{backupv1.ConditionVerified}}
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: BackupFinalizer}
	return ctrl.NewControllerManagedBy(mgr).
		Named("backup").
		For(&backupv1.Backup{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}, deletionPredicate()))).
		Owns(&batchv1.Job{}).
		Watches(&backupv1.BackupStore{}, handler.EnqueueRequestsFromMapFunc(r.backupsInNamespace)).
		Watches(&homelabv1.PostgresDatabase{}, handler.EnqueueRequestsFromMapFunc(r.backupsInNamespace)).
		Watches(&ircv1.SojuBouncer{}, handler.EnqueueRequestsFromMapFunc(r.backupsInNamespace)).
		Watches(&ircv1.ErgoNetwork{}, handler.EnqueueRequestsFromMapFunc(r.backupsInNamespace)).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles)).
		Complete(r)
}

// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backups/status,verbs=get;update;patch
// Owner references with blockOwnerDeletion on the Job and ConfigMap (OwnerReferencesPermissionEnforcement).
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backups/finalizers,verbs=update
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backupstores,verbs=get;list;watch
// Sources are read; a drill's scratch PostgresDatabase is created (server-side apply) and deleted.
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresdatabases,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=irc.josie.cloud,resources=sojubouncers,verbs=get;list;watch
// A drill's Job is deleted once its result is written (backup Jobs go with their Backup).
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// backupScope is one Backup reconcile's working state.
type backupScope struct {
	*reconcile.Session
	b      *backupv1.Backup
	status *backupv1.BackupStatus
	store  *backupv1.BackupStore
	secret string // the source's Secret holding the database URL

	// ergo is an ErgoNetwork source, Ready with a running pod (backup_ergo.go).
	ergo *ergoSource
}

// Reconcile takes the Backup a step further: deletion, then store, source and Job.
func (r *backupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &backupv1.Backup{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, b, r.status.Forget, r.drillStatus.Forget, r.applier.Forget); !found {
		return ctrl.Result{}, err
	}
	status := b.Status.DeepCopy()
	s := &backupScope{
		Session: &reconcile.Session{Owner: b, Before: b.Status.Conditions, Conditions: &status.Conditions, Client: r.Client, Applier: r.applier, Recorder: r.Recorder},
		b:       b,
		status:  status,
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	// The finalizer only with artifactPolicy Delete (Retain, the default, leaves the artifact: nothing to
	// wait for on deletion).
	if b.Spec.ArtifactPolicy == backupv1.ArtifactDelete {
		if err := r.finalizer.Ensure(ctx, b); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	} else if err := r.finalizer.Release(ctx, b); err != nil {
		return ctrl.Result{}, err
	}
	if b.Status.Phase == backupv1.BackupCompleted {
		// A Backup is taken once: its end is final. What may follow is its drill (spec.verify), which
		// writes only its own part of the status; without one, a Completed Backup costs no more writes.
		return r.reconcileDrill(ctx, s)
	}
	if b.Status.Phase == backupv1.BackupFailed {
		return ctrl.Result{}, nil
	}
	res, err := reconcile.Finish(ctx, r.status, s, func() *backupv1.BackupStatus { return status },
		r.reconcileStore, r.reconcileSource, r.reconcileJob)
	if err == nil && status.Phase == backupv1.BackupCompleted && b.Spec.Verify {
		// Its own status write sends the Backup no event: look again for the drill.
		res.RequeueAfter = drillStartDelay
	}
	return res, err
}

// reconcileStore finds the Backup's BackupStore, in its own namespace, Ready.
func (r *backupReconciler) reconcileStore(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	store := &backupv1.BackupStore{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.b.Namespace, Name: s.b.Spec.Store}, store)
	if apierrors.IsNotFound(err) {
		r.wait(s, backupv1.ConditionStore, backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q does not exist", s.b.Spec.Store))
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	ready := meta.FindStatusCondition(store.Status.Conditions, reconcile.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != store.Generation {
		msg := fmt.Sprintf("BackupStore %q is not Ready", store.Name)
		if ready != nil && ready.Status == metav1.ConditionFalse {
			msg += " (" + ready.Reason + ")"
		}
		r.wait(s, backupv1.ConditionStore, backupv1.ReasonStoreNotReady, msg)
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	s.store = store
	s.Set(backupv1.ConditionStore, metav1.ConditionTrue, backupv1.ReasonReachable, fmt.Sprintf("BackupStore %q is Ready: %s", store.Name, store.Status.Location))
	return ctrl.Result{}, nil
}

// reconcileSource finds the source object, in the Backup's namespace, ready to be read, and the Secret
// of its own database role: the dump runs as the tenant's role, which owns its database, never as an admin.
func (r *backupReconciler) reconcileSource(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	src := s.b.Spec.Source
	key := client.ObjectKey{Namespace: s.b.Namespace, Name: src.Name}
	var obj client.Object
	var secret string
	var ready bool
	switch src.Kind {
	case backupv1.SourcePostgresDatabase:
		db := &homelabv1.PostgresDatabase{}
		obj = db
		if err := r.Client.Get(ctx, key, db); err == nil {
			ready = meta.IsStatusConditionTrue(db.Status.Conditions, reconcile.ConditionReady)
			secret = db.Status.SecretName
		}
	case backupv1.SourceSojuBouncer:
		sb := &ircv1.SojuBouncer{}
		obj = sb
		if err := r.Client.Get(ctx, key, sb); err == nil {
			ready = meta.IsStatusConditionTrue(sb.Status.Conditions, ircv1.ConditionDatabase)
			secret = sb.Status.DatabaseSecretName
		}
	case backupv1.SourceErgoNetwork:
		return r.reconcileErgoSource(ctx, s)
	default:
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonInvalid, fmt.Sprintf("%s cannot be backed up by this operator", src.Kind))
		return ctrl.Result{}, nil
	}
	err := r.Client.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceMissing, fmt.Sprintf("%s %q does not exist", src.Kind, src.Name))
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	case !ready || secret == "":
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceNotReady, fmt.Sprintf("%s %q has no ready database yet", src.Kind, src.Name))
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	s.secret = secret
	s.Set(backupv1.ConditionSource, metav1.ConditionTrue, reasonSourceReady, fmt.Sprintf("%s %q: its database role's Secret is %s", src.Kind, src.Name, secret))
	return ctrl.Result{}, nil
}

// wait records a part that is not there yet: the Backup stays Pending (unless its Job already runs).
func (r *backupReconciler) wait(s *backupScope, condType, reason, msg string) {
	s.Fail(condType, reason, msg)
	if s.status.Phase == "" || s.status.Phase == backupv1.BackupPending {
		s.status.Phase = backupv1.BackupPending
		s.Set(reconcile.ConditionReady, metav1.ConditionFalse, reason, msg)
	}
}

// reconcileJob starts the Job once store and source are there, and reads how it ended.
func (r *backupReconciler) reconcileJob(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.b.Namespace, Name: jobs.Name(s.b)}, job)
	switch {
	case apierrors.IsNotFound(err):
		job = nil
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(job, s.b):
		s.status.Phase = backupv1.BackupPending
		s.Fail(reconcile.ConditionReady, reconcile.ReasonNameConflict,
			fmt.Sprintf("Job %s exists and is not this Backup's; it is left untouched", job.Name))
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
	}
	if job == nil {
		if s.b.Spec.Source.Kind == backupv1.SourceErgoNetwork {
			return r.startDatastoreJob(ctx, s)
		}
		if s.store == nil || s.secret == "" {
			return ctrl.Result{}, nil // reconcileStore and reconcileSource said why
		}
		return r.startJob(ctx, s)
	}
	// What startJob recorded is derived again from the Job, so a reconcile that read the Backup from a cache
	// that has not seen that status write yet does not write it away.
	s.status.ID, s.status.Format = jobs.ID(s.b), string(sourceFormat(s.b.Spec.Source.Kind))
	if s.status.StartTime == nil {
		created := job.CreationTimestamp
		s.status.StartTime = &created
	}
	switch jobs.Finished(job) {
	case batchv1.JobComplete:
		return r.completed(ctx, s)
	case batchv1.JobFailed:
		r.failed(ctx, s, job)
		return ctrl.Result{}, nil
	}
	s.status.Phase = backupv1.BackupRunning
	s.Set(reconcile.ConditionReady, metav1.ConditionFalse, reasonRunning, fmt.Sprintf("Job %s is moving the data", job.Name))
	return ctrl.Result{}, nil
}

// startJob chooses pg_dump's image from the server's version and applies the store file and the Job.
func (r *backupReconciler) startJob(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	operatorImage := r.own.Get(ctx)
	if operatorImage == "" {
		r.wait(s, reconcile.ConditionReady, reasonImageUnknown,
			"the operator does not know its own image, which the Job's init container runs: RELATED_IMAGE_OPERATOR is unset and its own pod (POD_NAMESPACE, POD_NAME) could not be read")
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	var secret corev1.Secret
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.b.Namespace, Name: s.secret}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceNotReady, fmt.Sprintf("Secret %q of the source does not exist", s.secret))
			return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
		}
		return ctrl.Result{}, err
	}
	url := string(secret.Data[jobs.DatabaseURLKey])
	if url == "" {
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceNotReady, fmt.Sprintf("Secret %q of the source has no key %s", s.secret, jobs.DatabaseURLKey))
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	// pg_dump refuses a server newer than itself: ask the server (as the tenant's own role) which major it is.
	major, err := r.ServerMajor(ctx, url)
	if err != nil {
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceNotReady, fmt.Sprintf("the source's database server did not tell its version: %s", redactURL(err.Error(), url)))
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	id := jobs.ID(s.b)
	in := jobs.Input{Store: s.store, AccessKeyIDKey: accessKeyIDKey(s.store), SecretAccessKeyKey: secretAccessKeyKey(s.store),
		CAKey: caKey(s.store), SourceSecret: s.secret, ID: id, OperatorImage: operatorImage,
		PostgresImage: jobs.PostgresImage(r.PostgresImage, major), ToolVersion: fmt.Sprintf("pg_dump (PostgreSQL) %d", major)}
	cm, err := jobs.StoreConfigMap(s.b, in)
	if err != nil {
		return ctrl.Result{}, err
	}
	if applied, res, err := s.Apply(ctx, cm, reconcile.ConditionReady); !applied {
		return res, err
	}
	job := r.bounded(jobs.Job(s.b, in))
	if applied, res, err := s.Apply(ctx, job, reconcile.ConditionReady); !applied {
		return res, err
	}
	// The Job's creation (Apply leaves the live object in job) is the start, as reconcileJob derives it.
	started := job.CreationTimestamp
	s.status.Phase, s.status.ID, s.status.StartTime = backupv1.BackupRunning, id, &started
	s.status.Format = string(backup.FormatPgDumpCustom)
	s.Set(reconcile.ConditionReady, metav1.ConditionFalse, reasonRunning, fmt.Sprintf("Job %s is moving the data (image %s)", jobs.Name(s.b), in.PostgresImage))
	return ctrl.Result{}, nil
}

// completed reads the artifact's manifest from the store: the store is the truth, and the artifact is
// complete if and only if its manifest is there.
func (r *backupReconciler) completed(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	if s.store == nil {
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil // the store's condition says why
	}
	repo, err := r.repository(ctx, s.store)
	if err != nil {
		return r.storeTrouble(s, err)
	}
	ref := r.ref(s.b)
	m, err := repo.Manifest(ctx, ref)
	if errors.Is(err, backup.ErrIncomplete) {
		s.status.Phase = backupv1.BackupFailed
		s.Fail(reconcile.ConditionReady, reasonArtifactMissing,
			fmt.Sprintf("the Job succeeded but the store holds no complete artifact %s", ref.ID))
		return ctrl.Result{}, nil
	}
	if err != nil {
		return r.storeTrouble(s, err)
	}
	started, done := metav1.NewTime(m.Started), metav1.NewTime(m.Completed)
	s.status.Phase = backupv1.BackupCompleted
	s.status.StartTime, s.status.CompletionTime = &started, &done
	s.status.Size, s.status.SHA256, s.status.Format, s.status.ToolVersion = m.Size, m.SHA256, string(m.Format), m.ToolVersion
	s.status.Location = location(s.store.Spec.Bucket, objectKey(s.store, ref))
	msg := fmt.Sprintf("%d bytes at %s, sha256 %s", m.Size, s.status.Location, m.SHA256)
	s.Set(reconcile.ConditionReady, metav1.ConditionTrue, backupv1.ReasonCompleted, msg)
	s.Normal(backupv1.ReasonCompleted, "Backup completed: "+msg)
	return ctrl.Result{}, nil
}

// failed records a failed Job with the container's last words (its termination message: the end of its
// log), which the program writes without credentials.
func (r *backupReconciler) failed(ctx context.Context, s *backupScope, job *batchv1.Job) {
	_, words := jobs.LastWords(ctx, r.APIReader, job, lastWordsLimit)
	msg := fmt.Sprintf("Job %s failed; nothing that looks complete was left in the store", job.Name)
	if jobFailedReason(job) == batchv1.JobReasonDeadlineExceeded {
		msg = fmt.Sprintf("Job %s did not finish within its deadline of %s (--backup-job-deadline); nothing that looks complete was left in the store", job.Name, r.JobDeadline)
	}
	if words != "" {
		msg += ": " + words
	}
	s.status.Phase = backupv1.BackupFailed
	s.Fail(reconcile.ConditionReady, backupv1.ReasonJobFailed, msg)
}

// bounded gives job the Jobs' deadline (JobDeadline).
func (r *backupReconciler) bounded(job *batchv1.Job) *batchv1.Job {
	job.Spec.ActiveDeadlineSeconds = ptr.To(int64(r.JobDeadline / time.Second))
	return job
}

// storeTrouble records a store that could not be read: the Store condition and a retry with back-off.
func (r *backupReconciler) storeTrouble(s *backupScope, err error) (ctrl.Result, error) {
	s.Fail(backupv1.ConditionStore, storeaccess.Reason(err), "the store could not be read: "+err.Error())
	return ctrl.Result{RequeueAfter: backupStoreBackoff}, nil
}

// repository is the Backup namespace's repository in store.
func (r *backupReconciler) repository(ctx context.Context, store *backupv1.BackupStore) (*backup.Repository, error) {
	return storeaccess.Repository(ctx, r.APIReader, store)
}

// ref is the Backup's artifact.
func (r *backupReconciler) ref(b *backupv1.Backup) backup.Ref {
	id := b.Status.ID
	if id == "" {
		id = jobs.ID(b)
	}
	return backup.Ref{Namespace: b.Namespace, Kind: string(b.Spec.Source.Kind), Name: b.Spec.Source.Name, ID: id}
}

// objectKey is the data object's full key in the bucket.
func objectKey(store *backupv1.BackupStore, ref backup.Ref) string {
	return namespaceRoot(store.Spec.Prefix, ref.Namespace) + ref.DataKey()
}

// jobFailedReason is the reason of job's Failed condition ("" when it has none).
func jobFailedReason(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// backupsInNamespace maps a store or a source to the unfinished Backups of its namespace, and a drill's
// scratch PostgresDatabase to the Backup that controls it.
func (r *backupReconciler) backupsInNamespace(ctx context.Context, o client.Object) []ctrl.Request {
	var reqs []ctrl.Request
	if c := metav1.GetControllerOf(o); c != nil && c.Kind == "Backup" && strings.HasPrefix(c.APIVersion, backupv1.GroupVersion.Group+"/") {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: c.Name}})
	}
	var list backupv1.BackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Backups")
		return reqs
	}
	for _, b := range list.Items {
		if b.Status.Phase != backupv1.BackupCompleted && b.Status.Phase != backupv1.BackupFailed {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return reqs
}
