package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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
	"github.com/platform-operator/platform-operator/internal/kit/backup/schedule"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// Reasons of a BackupSchedule's conditions besides the API's own (api/backup/v1alpha1).
const (
	// ReasonScheduled is a schedule whose store and source are there and whose last Backup did not fail.
	ReasonScheduled = "Scheduled"
	// ReasonStoreReady is a schedule whose BackupStore exists and is Ready.
	ReasonStoreReady = "StoreReady"
	// ReasonSourceFound is a schedule whose source object exists.
	ReasonSourceFound = "SourceFound"
)

// Event reasons of a BackupSchedule.
const (
	// EventBackupCreated is a Backup the schedule made.
	EventBackupCreated = "BackupCreated"
	// EventBackupPruned is a Backup retention deleted.
	EventBackupPruned = "BackupPruned"
)

// scheduleRecheck is how soon a schedule is looked at again at most: its store and source are read from
// the cache, and their changes send it no event, so a store that turns Ready is seen within this.
const scheduleRecheck = 10 * time.Minute

// maxLabelValue is the longest label value Kubernetes takes: the schedule's and the source's names are
// label values of every Backup the schedule makes.
const maxLabelValue = 63

// scheduleParts are the schedule's part conditions in the order Ready reports them.
var scheduleParts = []string{backupv1.ConditionStore, backupv1.ConditionSource}

// ScheduleReconciler makes a Backup of a BackupSchedule's source each time its cron schedule comes
// round, one at a time, and prunes the schedule's old Backups by its retention. The Backups it makes
// carry no owner reference: they (and their artifacts) outlive the schedule. It writes only Backups; the
// Backup controller takes each one and moves the data.
type ScheduleReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Client reads from the manager's cache and writes to the API server; SetupWithManager fills it and
	// Recorder when nil.
	Client client.Client
	// Recorder emits events.
	Recorder record.EventRecorder
	// Now is the clock (time.Now when nil): tests move it instead of waiting for cron.
	Now func() time.Time

	status *reconcile.StatusWriter
	// restoring are the kinds that restore whose API is served: their unfinished restores hold Backups.
	restoring []backupv1.SourceKind
	// kept is, per schedule, the message of the Backups last kept beyond retention for a
	// reader, so that the BackupKept event is sent when that changes, not on every reconcile.
	kept sync.Map
}

// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backupschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backupstores,verbs=get;list;watch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresdatabases,verbs=get;list;watch
// +kubebuilder:rbac:groups=irc.josie.cloud,resources=sojubouncers;ergonetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the reconciler: a schedule is reconciled when its spec or annotations
// change, when one of its Backups changes (a Backup that finishes lets the next one be made), and at its
// next run (RequeueAfter).
func (r *ScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, nil, &r.Recorder)
	if r.Now == nil {
		r.Now = time.Now
	}
	r.status = &reconcile.StatusWriter{Client: r.Client, FieldOwner: oplabels.FieldOwner + "/backupschedule",
		Fields:     []string{"observedGeneration", "lastScheduleTime", "lastSuccessfulBackup", "lastSuccessTime", "lastVerification"},
		Conditions: append([]string{reconcile.ConditionReady}, scheduleParts...)}
	served, err := servedRestoringKinds(mgr.GetScheme(), mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	r.restoring = served
	b := ctrl.NewControllerManagedBy(mgr).
		Named("backupschedule").
		For(&backupv1.BackupSchedule{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}))).
		Watches(&backupv1.Backup{}, handler.EnqueueRequestsFromMapFunc(scheduleOfBackup))
	// A source that appears or goes is the schedule's Source condition; a restore that finishes (or is
	// deleted) lets retention prune the Backup it was reading.
	for _, k := range restoringKinds {
		if slices.Contains(served, k.kind) {
			b = b.Watches(k.gvk(), handler.EnqueueRequestsFromMapFunc(r.schedulesOfObject(k.kind)))
		}
	}
	return b.WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles)).
		Complete(r)
}

// scheduleOfBackup maps a Backup to the schedule that made it.
func scheduleOfBackup(_ context.Context, o client.Object) []ctrl.Request {
	name := o.GetLabels()[backupv1.LabelSchedule]
	if name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// scheduleScope is one BackupSchedule reconcile's working state.
type scheduleScope struct {
	*reconcile.Session
	sched  *backupv1.BackupSchedule
	status *backupv1.BackupScheduleStatus
	now    time.Time
	// parsed is the schedule expression; nil when it is invalid.
	parsed *schedule.Schedule
	// invalid says why the spec cannot be acted on (a bad expression, a name too long for a label).
	invalid string
	// backups are the schedule's Backups that are not being deleted.
	backups []backupv1.Backup
	// kept says which Backups retention would prune are kept because a restore or drill reads them.
	kept string
}

// Reconcile makes the Backup that is due, prunes by retention and reports the schedule's Backups.
func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sched := &backupv1.BackupSchedule{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, sched, func(key client.ObjectKey) {
		r.status.Forget(key)
		r.kept.Delete(key)
	}); !found {
		return ctrl.Result{}, err
	}
	if !sched.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // no finalizer: the Backups it made stay
	}
	status := sched.Status.DeepCopy()
	s := &scheduleScope{
		Session: &reconcile.Session{Owner: sched, Before: sched.Status.Conditions, Conditions: &status.Conditions, Client: r.Client, Recorder: r.Recorder},
		sched:   sched,
		status:  status,

		now: r.Now().UTC(),
	}
	return reconcile.Finish(ctx, r.status, s, func() *backupv1.BackupScheduleStatus {
		status.ObservedGeneration = sched.Generation
		r.summarize(s)
		return status
	}, r.reconcileSpec, r.reconcileStore, r.reconcileSource, r.reconcileBackups, r.reconcileRun, r.reconcileRetention)
}

// reconcileSpec parses the schedule expression and checks that the names fit the Backups' labels: a
// mistake only a spec change fixes, so a condition and an event, no retry.
func (r *ScheduleReconciler) reconcileSpec(_ context.Context, s *scheduleScope) (ctrl.Result, error) {
	parsed, err := schedule.Parse(s.sched.Spec.Schedule)
	switch {
	case err != nil:
		s.invalid = fmt.Sprintf("spec.schedule: %v", err)
	case len(s.sched.Name) > maxLabelValue:
		s.invalid = fmt.Sprintf("the schedule's name is longer than %d characters and cannot label its Backups", maxLabelValue)
	case len(s.sched.Spec.Source.Name) > maxLabelValue:
		s.invalid = fmt.Sprintf("spec.source.name is longer than %d characters and cannot label the Backups", maxLabelValue)
	default:
		s.parsed = parsed
		return ctrl.Result{}, nil
	}
	if reconcile.Changed(s.Before, reconcile.ConditionReady, metav1.ConditionFalse, backupv1.ReasonInvalid) {
		s.Warn(backupv1.ReasonInvalid, s.invalid)
	}
	return ctrl.Result{}, nil
}

// reconcileStore checks that the BackupStore exists and is Ready.
func (r *ScheduleReconciler) reconcileStore(ctx context.Context, s *scheduleScope) (ctrl.Result, error) {
	name := s.sched.Spec.Store
	var store backupv1.BackupStore
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.sched.Namespace, Name: name}, &store)
	switch {
	case apierrors.IsNotFound(err):
		s.Fail(backupv1.ConditionStore, backupv1.ReasonStoreNotReady,
			fmt.Sprintf("BackupStore %q does not exist in namespace %q", name, s.sched.Namespace))
	case err != nil:
		s.Set(backupv1.ConditionStore, metav1.ConditionUnknown, backupv1.ReasonStoreNotReady, "the BackupStore could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read BackupStore: %w", err)
	case !meta.IsStatusConditionTrue(store.Status.Conditions, reconcile.ConditionReady):
		s.Fail(backupv1.ConditionStore, backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q is not Ready", name))
	default:
		s.Set(backupv1.ConditionStore, metav1.ConditionTrue, ReasonStoreReady, fmt.Sprintf("BackupStore %q is Ready", name))
	}
	return ctrl.Result{}, nil
}

// sourceObject is an empty object of a source kind (nil for a kind the operator does not back up).
func sourceObject(kind backupv1.SourceKind) client.Object {
	switch kind {
	case backupv1.SourcePostgresDatabase:
		return &homelabv1.PostgresDatabase{}
	case backupv1.SourceSojuBouncer:
		return &ircv1.SojuBouncer{}
	case backupv1.SourceErgoNetwork:
		return &ircv1.ErgoNetwork{}
	}
	return nil
}

// reconcileSource checks that the source object exists. Whether it has data to back up yet is the
// Backup controller's to say, on each Backup.
func (r *ScheduleReconciler) reconcileSource(ctx context.Context, s *scheduleScope) (ctrl.Result, error) {
	src := s.sched.Spec.Source
	obj := sourceObject(src.Kind)
	if obj == nil {
		s.Fail(backupv1.ConditionSource, backupv1.ReasonInvalid, fmt.Sprintf("kind %q cannot be backed up", src.Kind))
		return ctrl.Result{}, nil
	}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.sched.Namespace, Name: src.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		s.Fail(backupv1.ConditionSource, backupv1.ReasonSourceMissing,
			fmt.Sprintf("%s %q does not exist in namespace %q", src.Kind, src.Name, s.sched.Namespace))
	case err != nil:
		s.Set(backupv1.ConditionSource, metav1.ConditionUnknown, backupv1.ReasonSourceMissing, "the source could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read %s: %w", src.Kind, err)
	default:
		s.Set(backupv1.ConditionSource, metav1.ConditionTrue, ReasonSourceFound, fmt.Sprintf("%s %q exists", src.Kind, src.Name))
	}
	return ctrl.Result{}, nil
}

// madeBy says whether b is a Backup the schedule made: its schedule label and the operator's managed-by
// label. A Backup a user labelled with the schedule's name is not the schedule's: it is never pruned.
func madeBy(b *backupv1.Backup, sched string) bool {
	return b.Labels[backupv1.LabelSchedule] == sched && b.Labels[oplabels.ManagedByLabel] == oplabels.OperatorName
}

// reconcileBackups lists the schedule's Backups (from the cache) for the steps after it.
func (r *ScheduleReconciler) reconcileBackups(ctx context.Context, s *scheduleScope) (ctrl.Result, error) {
	var list backupv1.BackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.sched.Namespace),
		client.MatchingLabels{backupv1.LabelSchedule: s.sched.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list Backups: %w", err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		if !madeBy(b, s.sched.Name) {
			continue
		}
		// The newest run a Backup stands for is the last run, whatever the status says: a status read
		// from a cache that has not seen the write that recorded the run (or a write that failed) must not
		// make the run due again.
		if run, ok := runOf(s.sched.Name, b.Name); ok && (s.status.LastScheduleTime == nil || run.After(s.status.LastScheduleTime.Time)) {
			s.status.LastScheduleTime = ptr.To(metav1.NewTime(run))
		}
		if b.DeletionTimestamp.IsZero() {
			s.backups = append(s.backups, *b)
		}
	}
	return ctrl.Result{}, nil
}

// runOf is the run a Backup named by backupName stands for (false for another name).
func runOf(sched, name string) (time.Time, bool) {
	suffix, ok := strings.CutPrefix(name, sched+"-")
	if !ok || len(suffix) != len(runLayout) {
		return time.Time{}, false
	}
	run, err := time.ParseInLocation(runLayout, suffix, time.UTC)
	return run, err == nil
}

// unfinished says whether a Backup's Job may still be writing: no phase yet, Pending or Running.
func unfinished(b *backupv1.Backup) bool {
	return b.Status.Phase != backupv1.BackupCompleted && b.Status.Phase != backupv1.BackupFailed
}

// backupName is the name of the Backup standing for run: <schedule>-<yyyymmddhhmmss> in UTC. One name
// per run makes a second reconcile of the same run (a cache that has not seen the first's status yet)
// find the Backup already there instead of making another.
func backupName(sched string, run time.Time) string {
	return sched + "-" + run.UTC().Format(runLayout)
}

// runLayout is the run time in a Backup's name.
const runLayout = "20060102150405"

// desiredBackup is the Backup the schedule makes for run: no owner reference (it outlives the
// schedule), artifactPolicy Delete (pruning it removes its artifact, through the Backup controller's
// finalizer), and the schedule's verify.
func desiredBackup(sched *backupv1.BackupSchedule, run time.Time) *backupv1.Backup {
	return &backupv1.Backup{
		ObjectMeta: metav1.ObjectMeta{
			Name:      backupName(sched.Name, run),
			Namespace: sched.Namespace,
			Labels: map[string]string{
				backupv1.LabelSchedule:   sched.Name,
				backupv1.LabelSourceKind: string(sched.Spec.Source.Kind),
				backupv1.LabelSourceName: sched.Spec.Source.Name,
				oplabels.ManagedByLabel:  oplabels.OperatorName,
			},
		},
		Spec: backupv1.BackupSpec{
			Source:         sched.Spec.Source,
			Store:          sched.Spec.Store,
			ArtifactPolicy: backupv1.ArtifactDelete,
			Verify:         sched.Spec.Verify,
		},
	}
}

// reconcileRun makes the Backup that is due: not while suspended, not while the spec is invalid or the
// store or source is missing (the run is then taken once they are back), and not while one of the
// schedule's Backups is unfinished (one at a time; that Backup's end wakes the schedule).
func (r *ScheduleReconciler) reconcileRun(ctx context.Context, s *scheduleScope) (ctrl.Result, error) {
	if s.parsed == nil || s.sched.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	last := s.sched.CreationTimestamp.Time
	if s.status.LastScheduleTime != nil {
		last = s.status.LastScheduleTime.Time
	}
	due, run, next := s.parsed.Due(last, s.now)
	wait := ctrl.Result{RequeueAfter: min(max(next.Sub(s.now), time.Second), scheduleRecheck)}
	if !due {
		return wait, nil
	}
	for _, part := range scheduleParts {
		if !meta.IsStatusConditionTrue(*s.Conditions, part) {
			return ctrl.Result{RequeueAfter: scheduleRecheck}, nil
		}
	}
	for i := range s.backups {
		if unfinished(&s.backups[i]) {
			return ctrl.Result{}, nil
		}
	}
	b := desiredBackup(s.sched, run)
	err := r.Client.Create(ctx, b)
	switch {
	case apierrors.IsAlreadyExists(err):
		var existing backupv1.Backup
		if gerr := r.Client.Get(ctx, client.ObjectKeyFromObject(b), &existing); gerr != nil {
			return ctrl.Result{}, fmt.Errorf("read Backup %s: %w", b.Name, gerr)
		}
		if !madeBy(&existing, s.sched.Name) {
			// Someone else's object holds the name: never adopted, reported, retried slowly.
			s.Warn(reconcile.ReasonNameConflict, fmt.Sprintf("Backup %q exists and was not made by this schedule", b.Name))
			return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
		}
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("create Backup %s: %w", b.Name, err)
	default:
		s.Normalf(EventBackupCreated, "Created Backup %s for the run at %s", b.Name, run.Format(time.RFC3339))
		s.backups = append(s.backups, *b)
	}
	s.status.LastScheduleTime = ptr.To(metav1.NewTime(run))
	return wait, nil
}

// pruneItem is what retention reads of a Backup: its age counts from when its data was taken.
func pruneItem(b *backupv1.Backup) schedule.Item {
	created := b.CreationTimestamp.Time
	if b.Status.StartTime != nil {
		created = b.Status.StartTime.Time
	}
	return schedule.Item{Name: b.Name, Created: created, Phase: b.Status.Phase}
}

// reconcileRetention deletes the Backups retention prunes (schedule.Prune); each goes with its artifact
// through the Backup controller's finalizer. It runs while suspended too.
func (r *ScheduleReconciler) reconcileRetention(ctx context.Context, s *scheduleScope) (ctrl.Result, error) {
	if s.sched.Spec.Retention == nil {
		return ctrl.Result{}, nil
	}
	items := make([]schedule.Item, 0, len(s.backups))
	byName := map[string]*backupv1.Backup{}
	for i := range s.backups {
		items = append(items, pruneItem(&s.backups[i]))
		byName[s.backups[i].Name] = &s.backups[i]
	}
	restores, err := r.unfinishedRestores(ctx, s.sched.Namespace)
	if err != nil {
		return ctrl.Result{}, err // nothing is pruned while what restores read is unknown
	}
	why := BackupsInUse(s.backups, restores)
	inUse := make(map[string]bool, len(why))
	for name := range why {
		inUse[name] = true
	}
	retention := schedule.RetentionOf(s.sched.Spec.Retention)
	// The Backups the rules would prune but a reader holds: said in Ready's message, and once in an event.
	kept := map[string]string{}
	for _, name := range schedule.Prune(items, retention, s.now, nil) {
		if why[name] != "" {
			kept[name] = why[name]
		}
	}
	s.kept = keptMessage(kept)
	if prev, _ := r.kept.Load(client.ObjectKeyFromObject(s.sched)); prev != s.kept {
		if s.kept != "" {
			s.Normalf(EventBackupKept, "Kept beyond retention while read: %s", s.kept)
		}
		r.kept.Store(client.ObjectKeyFromObject(s.sched), s.kept)
	}
	var errs []error
	for _, name := range schedule.Prune(items, retention, s.now, inUse) {
		b := byName[name]
		err := r.Client.Delete(ctx, b, client.Preconditions{UID: ptr.To(b.UID)})
		if client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete Backup %s: %w", name, err))
			continue
		}
		s.Normalf(EventBackupPruned, "Deleted Backup %s: retention", name)
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// newest is the Backup of backups for which key is latest (nil when key is nil for all).
func newest(backups []backupv1.Backup, key func(*backupv1.Backup) *metav1.Time) *backupv1.Backup {
	var best *backupv1.Backup
	var bestAt time.Time
	for i := range backups {
		at := key(&backups[i])
		if at == nil {
			continue
		}
		if best == nil || at.After(bestAt) || (at.Equal(&metav1.Time{Time: bestAt}) && backups[i].Name > best.Name) {
			best, bestAt = &backups[i], at.Time
		}
	}
	return best
}

// finishedAt is a finished Backup's end: its completionTime, else its creation.
func finishedAt(b *backupv1.Backup) *metav1.Time {
	if unfinished(b) {
		return nil
	}
	if b.Status.CompletionTime != nil {
		return b.Status.CompletionTime
	}
	return &b.CreationTimestamp
}

// summarize computes the status from the Backups: the newest success, the newest drill's result, and
// Ready, which is False when the spec is invalid, a part is not True, or the newest finished Backup
// failed (naming it).
func (r *ScheduleReconciler) summarize(s *scheduleScope) {
	if c := newest(s.backups, func(b *backupv1.Backup) *metav1.Time {
		if b.Status.Phase != backupv1.BackupCompleted {
			return nil
		}
		return finishedAt(b)
	}); c != nil {
		s.status.LastSuccessfulBackup = c.Name
		s.status.LastSuccessTime = finishedAt(c)
	}
	if v := newest(s.backups, func(b *backupv1.Backup) *metav1.Time {
		if v := b.Status.Verification; v != nil && v.Result != backupv1.VerificationRunning {
			if v.CompletionTime != nil {
				return v.CompletionTime
			}
			return finishedAt(b)
		}
		return nil
	}); v != nil {
		s.status.LastVerification = v.Status.Verification.Result
	}

	if s.invalid != "" {
		s.Set(reconcile.ConditionReady, metav1.ConditionFalse, backupv1.ReasonInvalid, s.invalid)
		return
	}
	ready := s.Summarize(scheduleParts, ReasonScheduled, readyMessage(s))
	if ready.Status != metav1.ConditionTrue {
		return
	}
	if last := newest(s.backups, finishedAt); last != nil && last.Status.Phase == backupv1.BackupFailed {
		msg := fmt.Sprintf("the last Backup, %s, failed", last.Name)
		if c := meta.FindStatusCondition(last.Status.Conditions, reconcile.ConditionReady); c != nil && c.Message != "" {
			msg += ": " + c.Message
		}
		s.Fail(reconcile.ConditionReady, backupv1.ReasonJobFailed, msg)
	}
}

// readyMessage says what the schedule does while Ready.
func readyMessage(s *scheduleScope) string {
	var msg string
	switch {
	case s.sched.Spec.Suspend:
		msg = "suspended: no new Backups; retention still prunes"
	case s.parsed != nil:
		msg = fmt.Sprintf("next Backup at %s", s.parsed.Next(s.now).Format(time.RFC3339))
	}
	if s.kept != "" {
		msg += "; kept beyond retention while read: " + s.kept
	}
	return msg
}
