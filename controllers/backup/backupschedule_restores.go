package backup

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// EventBackupKept is a Backup retention would prune that is kept because a restore is reading it.
const EventBackupKept = "BackupKept"

// finalRestoreReasons are the Restored reasons after which the restore reads nothing any more: nothing
// is retried (the object is deleted and made again to try once more).
var finalRestoreReasons = []string{backupv1.ReasonRestoreFailed, backupv1.ReasonTargetNotEmpty, backupv1.ReasonWrongKind,
	backupv1.ReasonSchemaTooNew}

// restoreFinished says whether a restore reads its backup no more: status.restoredFrom is set, or
// Restored is False with a final reason. A restore waiting (BackupNotCompleted, a store not Ready) or
// running is unfinished: its Job may read the artifact at any moment.
func restoreFinished(from *backupv1.RestoredFrom, conditions []metav1.Condition) bool {
	if from != nil {
		return true
	}
	c := meta.FindStatusCondition(conditions, backupv1.ConditionRestored)
	return c != nil && c.Status == metav1.ConditionFalse && slices.Contains(finalRestoreReasons, c.Reason)
}

// Restore is an object of a kind that restores whose restore has not finished: what it reads.
type Restore struct {
	// Kind and Name are the restoring object's.
	Kind backupv1.SourceKind
	Name string
	// From is its spec.restore.
	From backupv1.RestoreSource
}

func (r Restore) String() string { return fmt.Sprintf("%s %q", r.Kind, r.Name) }

// reads says whether restore r reads Backup b's artifact: spec.restore.backup names it, or
// spec.restore's store, sourceName and id are b's store, source name and id (and the kinds are the
// same: an artifact of another kind is refused, never read).
func (r Restore) reads(b *backupv1.Backup) bool {
	if r.From.Backup != "" {
		return r.From.Backup == b.Name
	}
	return r.Kind == b.Spec.Source.Kind && r.From.Store == b.Spec.Store && r.From.SourceName == b.Spec.Source.Name &&
		b.Status.ID != "" && r.From.ID == b.Status.ID
}

// BackupsInUse are the Backups that a restore or a drill is reading, which retention never prunes, each
// with why: a Backup whose drill is Running (status.verification.result), and a Backup an unfinished
// restore reads (restores: the namespace's objects with spec.restore whose restore has not finished).
func BackupsInUse(backups []backupv1.Backup, restores []Restore) map[string]string {
	out := map[string]string{}
	for i := range backups {
		b := &backups[i]
		var why []string
		if v := b.Status.Verification; v != nil && v.Result == backupv1.VerificationRunning {
			why = append(why, "its restore drill is running")
		}
		for _, r := range restores {
			if r.reads(b) {
				why = append(why, r.String()+" is restoring from it")
			}
		}
		if len(why) > 0 {
			out[b.Name] = strings.Join(why, "; ")
		}
	}
	return out
}

// restoringKinds are the kinds that restore, each with how to list them and read their restore.
var restoringKinds = []struct {
	kind backupv1.SourceKind
	gvk  func() client.Object
	list func(ctx context.Context, c client.Reader, ns string) ([]Restore, error)
}{
	{backupv1.SourcePostgresDatabase, func() client.Object { return &homelabv1.PostgresDatabase{} },
		func(ctx context.Context, c client.Reader, ns string) ([]Restore, error) {
			var l homelabv1.PostgresDatabaseList
			if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			var out []Restore
			for _, o := range l.Items {
				if o.Spec.Restore != nil && !restoreFinished((*backupv1.RestoredFrom)(o.Status.RestoredFrom), o.Status.Conditions) {
					out = append(out, Restore{backupv1.SourcePostgresDatabase, o.Name, backupv1.RestoreSource(*o.Spec.Restore)})
				}
			}
			return out, nil
		}},
	{backupv1.SourceSojuBouncer, func() client.Object { return &ircv1.SojuBouncer{} },
		func(ctx context.Context, c client.Reader, ns string) ([]Restore, error) {
			var l ircv1.SojuBouncerList
			if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			var out []Restore
			for _, o := range l.Items {
				if o.Spec.Restore != nil && !restoreFinished((*backupv1.RestoredFrom)(o.Status.RestoredFrom), o.Status.Conditions) {
					out = append(out, Restore{backupv1.SourceSojuBouncer, o.Name, backupv1.RestoreSource(*o.Spec.Restore)})
				}
			}
			return out, nil
		}},
	{backupv1.SourceErgoNetwork, func() client.Object { return &ircv1.ErgoNetwork{} },
		func(ctx context.Context, c client.Reader, ns string) ([]Restore, error) {
			var l ircv1.ErgoNetworkList
			if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			var out []Restore
			for _, o := range l.Items {
				if o.Spec.Restore != nil && !restoreFinished((*backupv1.RestoredFrom)(o.Status.RestoredFrom), o.Status.Conditions) {
					out = append(out, Restore{backupv1.SourceErgoNetwork, o.Name, backupv1.RestoreSource(*o.Spec.Restore)})
				}
			}
			return out, nil
		}},
}

// servedRestoringKinds are the kinds that restore whose API the cluster serves, asked of the manager's
// REST mapper once at set-up: an install may leave the irc or homelab CRDs out, and a watch or list of a
// kind that is not served would stop the controller. platform.Capabilities discovers only the optional
// APIs of other projects and the backup API itself, so the mapper is asked here.
func servedRestoringKinds(scheme *runtime.Scheme, mapper meta.RESTMapper) ([]backupv1.SourceKind, error) {
	var out []backupv1.SourceKind
	for _, k := range restoringKinds {
		gvk, err := apiutil.GVKForObject(k.gvk(), scheme)
		if err != nil {
			return nil, fmt.Errorf("kind of %s: %w", k.kind, err)
		}
		_, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case meta.IsNoMatchError(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("discover %s: %w", gvk, err)
		}
		out = append(out, k.kind)
	}
	return out, nil
}

// unfinishedRestores lists the objects of ns (of the served kinds) whose restore has not finished.
func (r *ScheduleReconciler) unfinishedRestores(ctx context.Context, ns string) ([]Restore, error) {
	var out []Restore
	for _, k := range restoringKinds {
		if !slices.Contains(r.restoring, k.kind) {
			continue
		}
		l, err := k.list(ctx, r.Client, ns)
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", k.kind, err)
		}
		out = append(out, l...)
	}
	return out, nil
}

// schedulesOfObject maps an object of a kind that can be backed up to the schedules of its namespace it
// concerns: those that back it up (its appearance or deletion is their Source condition: a schedule
// created with its source in one apply may first read the cache before the source is in it), and, when
// it has spec.restore, those that back up its kind (when its restore finishes, their retention may prune
// what it was reading).
func (r *ScheduleReconciler) schedulesOfObject(kind backupv1.SourceKind) func(context.Context, client.Object) []ctrl.Request {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		var list backupv1.BackupScheduleList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list BackupSchedules for a source or a restore", "object", client.ObjectKeyFromObject(o))
			return nil
		}
		restoring := hasRestore(o)
		var out []ctrl.Request
		for _, s := range list.Items {
			if s.Spec.Source.Kind != kind {
				continue
			}
			if s.Spec.Source.Name == o.GetName() || (restoring && s.Spec.Retention != nil) {
				out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
			}
		}
		return out
	}
}

// hasRestore says whether o (of a kind that restores) has spec.restore.
func hasRestore(o client.Object) bool {
	switch o := o.(type) {
	case *homelabv1.PostgresDatabase:
		return o.Spec.Restore != nil
	case *ircv1.SojuBouncer:
		return o.Spec.Restore != nil
	case *ircv1.ErgoNetwork:
		return o.Spec.Restore != nil
	}
	return false
}

// keptMessage says which Backups beyond retention are kept and why, in name order ("" for none).
func keptMessage(kept map[string]string) string {
	names := make([]string, 0, len(kept))
	for n := range kept {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s (%s)", n, kept[n]))
	}
	return strings.Join(parts, ", ")
}
