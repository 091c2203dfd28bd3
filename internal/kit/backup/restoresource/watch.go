package restoresource

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
)

// Kind is what Watch needs to know of a kind that restores: how to list it and which of its objects wait
// for a restore (spec.restore set, status.restoredFrom not yet).
type Kind struct {
	// Source is the kind as Backups name it.
	Source backupv1.SourceKind
	// NewList makes an empty list of the kind (&homelabv1.PostgresDatabaseList{}).
	NewList func() client.ObjectList
	// Pending says whether one item of the list waits for its restore.
	Pending func(client.Object) bool
}

// Watch has b watch what a kind's restores and its status.lastBackup read: a Backup or BackupStore that
// appears, changes or goes wakes the objects of the kind in its namespace whose restore is pending (they
// may have waited for it), and lastbackup.Watch wakes an object when its newest Completed Backup changes.
// Call it only when the cluster serves Backups (platform.Capabilities.Backups).
func Watch(mgr ctrl.Manager, b *builder.Builder, k Kind) (*builder.Builder, error) {
	wake := handler.EnqueueRequestsFromMapFunc(PendingIn(mgr.GetClient(), k))
	return lastbackup.Watch(mgr, b.Watches(&backupv1.Backup{}, wake).Watches(&backupv1.BackupStore{}, wake), k.Source)
}

// PendingIn maps an object to the requests of the kind's objects in its namespace whose restore is
// pending. A map function cannot return an error: a failed list is logged and maps to nothing (the
// object's own periodic recheck comes anyway).
func PendingIn(c client.Reader, k Kind) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		list := k.NewList()
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list for a restore", "kind", k.Source, "object", client.ObjectKeyFromObject(o))
			return nil
		}
		var reqs []ctrl.Request
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			if obj, ok := item.(client.Object); ok && k.Pending(obj) {
				reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}
