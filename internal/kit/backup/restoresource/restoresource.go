// Package restoresource resolves an object's spec.restore (a backup.josie.cloud RestoreSource) to the
// artifact a restore reads: the one reading of a restore source shared by every kind that restores
// (PostgresDatabase, SojuBouncer, ErgoNetwork). Everything is read in the restoring object's own namespace.
package restoresource

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// Source is the artifact a restore reads.
type Source struct {
	// Backup is the Backup named by spec.restore.backup, empty for the store form.
	Backup string
	// Store is the Ready BackupStore holding the artifact.
	Store *backupv1.BackupStore
	// SourceName and ID name the artifact in the store (the source object's name and the backup's id).
	SourceName, ID string
}

// RestoredFrom is what status.restoredFrom records of s once its restore completed at t.
func (s *Source) RestoredFrom(t metav1.Time) *backupv1.RestoredFrom {
	return &backupv1.RestoredFrom{Backup: s.Backup, Store: s.Store.Name, SourceName: s.SourceName, ID: s.ID, Time: t}
}

// Refusal is a restore source that cannot be used (yet): the Restored condition's reason and message, and
// whether it is a wait (a Backup not yet Completed, a store not yet Ready or not yet made) rather than final.
type Refusal struct {
	Reason, Message string
	Wait            bool
}

func (r *Refusal) Error() string { return r.Message }

// Resolve finds spec's artifact for an object of kind in namespace: a Backup of that namespace that is
// Completed and of the same kind, or a store, source name and id; the store must exist and be Ready. A
// *Refusal says why it cannot; any other error is the API server's.
func Resolve(ctx context.Context, c client.Reader, namespace string, kind backupv1.SourceKind, spec *backupv1.RestoreSource) (*Source, error) {
	src := &Source{Backup: spec.Backup, SourceName: spec.SourceName, ID: spec.ID}
	storeName := spec.Store
	if spec.Backup != "" {
		b := &backupv1.Backup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: spec.Backup}, b); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &Refusal{backupv1.ReasonBackupNotFound, fmt.Sprintf("Backup %q does not exist in namespace %s", spec.Backup, namespace), true}
			}
			return nil, err
		}
		if b.Spec.Source.Kind != kind {
			return nil, &Refusal{backupv1.ReasonWrongKind, fmt.Sprintf("Backup %q is a backup of a %s, not of a %s", b.Name, b.Spec.Source.Kind, kind), false}
		}
		if b.Status.Phase != backupv1.BackupCompleted || b.Status.ID == "" {
			phase := string(b.Status.Phase)
			if phase == "" {
				phase = "not started"
			}
			return nil, &Refusal{backupv1.ReasonBackupNotCompleted, fmt.Sprintf("Backup %q is %s; the restore waits until it is Completed", b.Name, phase), true}
		}
		storeName, src.SourceName, src.ID = b.Spec.Store, b.Spec.Source.Name, b.Status.ID
	}
	store := &backupv1.BackupStore{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: storeName}, store); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &Refusal{backupv1.ReasonBackupNotFound, fmt.Sprintf("BackupStore %q does not exist in namespace %s", storeName, namespace), true}
		}
		return nil, err
	}
	if !meta.IsStatusConditionTrue(store.Status.Conditions, reconcile.ConditionReady) {
		return nil, &Refusal{backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q is not Ready", storeName), true}
	}
	src.Store = store
	return src, nil
}
