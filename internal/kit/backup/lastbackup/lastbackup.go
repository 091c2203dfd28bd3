package lastbackup

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
)

// Last is a source object's last successful backup.
type Last struct {
	// Name is the Backup's name, in the source's namespace.
	Name string
	// Time is when its artifact was committed (status.completionTime).
	Time metav1.Time
}

// CacheRule is what a source kind's controller reads of Backups: every one in the watched namespaces.
func CacheRule() manager.CacheRule {
	return manager.CacheRule{Object: &backupv1.Backup{}, Scope: manager.All,
		Why: "Backups are made by users (and BackupSchedules) and carry no operator label; a source object's status shows its newest Completed one"}
}

// IndexField is the field index of the Backups of kind by their source's name. One index per kind: the
// controllers of two kinds in one manager each register their own, and neither registers the other's.
func IndexField(kind backupv1.SourceKind) string {
	return "backup.josie.cloud.source." + string(kind)
}

// Watch registers kind's index on mgr and has b watch Backups: a Backup of kind that is or was Completed
// wakes its source object, in the Backup's namespace, when it appears, completes, changes its completion
// time or goes. b's controller then reads Find in its reconcile. Call it only when the cluster serves
// Backups (platform.Capabilities.Backups): otherwise there is nothing to watch, and the fields stay empty.
func Watch(mgr ctrl.Manager, b *builder.Builder, kind backupv1.SourceKind) (*builder.Builder, error) {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &backupv1.Backup{}, IndexField(kind),
		func(o client.Object) []string {
			if s := o.(*backupv1.Backup).Spec.Source; s.Kind == kind {
				return []string{s.Name}
			}
			return nil
		}); err != nil {
		return nil, err
	}
	return b.Watches(&backupv1.Backup{}, handler.EnqueueRequestsFromMapFunc(source),
		builder.WithPredicates(Relevant(kind))), nil
}

// source maps a Backup to the object it backs up.
func source(_ context.Context, o client.Object) []ctrl.Request {
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.(*backupv1.Backup).Spec.Source.Name}}}
}

// Relevant lets through the events of Backups of kind that may change what Find answers: a Completed
// one made or deleted, one that completed or stopped being Completed, a Completed one whose completion
// time changed. A Backup's progress before it completes, and its drills after, wake nothing.
func Relevant(kind backupv1.SourceKind) predicate.Predicate {
	of := func(o client.Object) (*backupv1.Backup, bool) {
		b, ok := o.(*backupv1.Backup)
		return b, ok && b.Spec.Source.Kind == kind
	}
	completed := func(o client.Object) bool {
		b, ok := of(o)
		return ok && b.Status.Phase == backupv1.BackupCompleted
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return completed(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool { return completed(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldB, ok1 := of(e.ObjectOld)
			newB, ok2 := of(e.ObjectNew)
			if !ok1 || !ok2 {
				return false
			}
			wasDone, isDone := oldB.Status.Phase == backupv1.BackupCompleted, newB.Status.Phase == backupv1.BackupCompleted
			return wasDone != isDone || (isDone && !completedAt(oldB).Equal(completedAt(newB)))
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// Observe is Find for a source kind's controller: nil without reading when the cluster does not serve
// the backup API (served false: nothing of it is cached or watched). An error leaves to the caller what
// its status shows.
func Observe(ctx context.Context, r client.Reader, served bool, kind backupv1.SourceKind, namespace, name string) (*Last, error) {
	if !served {
		return nil, nil
	}
	last, err := Find(ctx, r, kind, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("read the last backup: %w", err)
	}
	return last, nil
}

// Fields are what a source's status shows of l: lastBackupTime and lastBackup, nil and "" for none.
func (l *Last) Fields() (*metav1.Time, string) {
	if l == nil {
		return nil, ""
	}
	return &l.Time, l.Name
}

// Find is the last successful backup of the object kind/name in namespace, read from r (the manager's
// cache, through IndexField); nil when it has none.
func Find(ctx context.Context, r client.Reader, kind backupv1.SourceKind, namespace, name string) (*Last, error) {
	var list backupv1.BackupList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{IndexField(kind): name}); err != nil {
		return nil, err
	}
	return Newest(list.Items, kind, name), nil
}

// Newest is the newest Completed Backup of kind/name among backups (all of one namespace): the one with
// the latest completion time (its creation when a Completed Backup has none), the greater name breaking a
// tie, as the backup metrics choose it (docs/metrics.md). Nil when none is Completed.
func Newest(backups []backupv1.Backup, kind backupv1.SourceKind, name string) *Last {
	var best *backupv1.Backup
	var bestAt time.Time
	for i := range backups {
		b := &backups[i]
		if b.Spec.Source.Kind != kind || b.Spec.Source.Name != name || b.Status.Phase != backupv1.BackupCompleted {
			continue
		}
		at := completedAt(b)
		if best == nil || Later(at, b.Name, bestAt, best.Name) {
			best, bestAt = b, at
		}
	}
	if best == nil {
		return nil
	}
	return &Last{Name: best.Name, Time: metav1.NewTime(bestAt)}
}

// Later says whether a Backup finished at t and named name comes after the one finished at best and named
// bestName: the newer, the greater name breaking a tie. The one order of "newest" for the source objects'
// status and the backup metrics.
func Later(t time.Time, name string, best time.Time, bestName string) bool {
	return t.After(best) || (t.Equal(best) && name > bestName)
}

// completedAt is when b was committed: status.completionTime, else (never for a Backup the operator
// completed) its creation.
func completedAt(b *backupv1.Backup) time.Time {
	if b.Status.CompletionTime != nil {
		return b.Status.CompletionTime.Time
	}
	return b.CreationTimestamp.Time
}
