package backup

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

// reconcileDelete is a deleted Backup with the finalizer (artifactPolicy Delete): its artifact is deleted
// from the store, then the finalizer released. A store that cannot be reached is retried with back-off,
// but never forever: after ReleaseTimeout from the deletion, or at once with the annotation
// backup.josie.cloud/release-finalizer: "true", the Backup goes with a Warning event naming the artifact
// left in the store.
func (r *backupReconciler) reconcileDelete(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	b := s.b
	if !r.finalizer.Has(b) {
		return ctrl.Result{}, nil
	}
	ref := r.ref(b)
	err := r.deleteArtifact(ctx, s)
	if err == nil {
		s.Normalf(reasonDeleted, "Deleted artifact %s from the store (artifactPolicy Delete)", ref.ID)
		return ctrl.Result{}, r.finalizer.Release(ctx, b)
	}
	waited := r.Now().Sub(b.DeletionTimestamp.Time)
	if b.Annotations[ReleaseFinalizerAnnotation] == "true" || waited >= r.ReleaseTimeout {
		why := "the annotation " + ReleaseFinalizerAnnotation + " says so"
		if b.Annotations[ReleaseFinalizerAnnotation] != "true" {
			why = fmt.Sprintf("the store could not be reached for %s", r.ReleaseTimeout)
		}
		s.Warnf(reasonReleased, "Released the finalizer without deleting artifact %s/%s/%s from the store: %s (%v)",
			ref.Kind, ref.Name, ref.ID, why, err)
		return ctrl.Result{}, r.finalizer.Release(ctx, b)
	}
	res, _ := r.storeTrouble(s, err)
	s.Warnf(reasonDeleteFailed, "Artifact %s could not be deleted from the store; retrying: %v", ref.ID, err)
	if werr := r.status.Write(ctx, b, s.status); werr != nil {
		return res, werr
	}
	// Back off with the time waited, up to the release.
	res.RequeueAfter = min(max(waited/4, backupStoreBackoff), 10*time.Minute, r.ReleaseTimeout-waited)
	return res, nil
}

// deleteArtifact deletes the Backup's artifact from its store. A Backup that never started (no id) has no
// artifact; deleting one already gone is not an error.
func (r *backupReconciler) deleteArtifact(ctx context.Context, s *backupScope) error {
	if s.b.Status.ID == "" {
		return nil
	}
	store := &backupv1.BackupStore{}
	if err := r.Client.Get(ctx, ctrlKey(s.b.Namespace, s.b.Spec.Store), store); err != nil {
		return fmt.Errorf("BackupStore %q: %w", s.b.Spec.Store, err)
	}
	repo, err := r.repository(ctx, store)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	return repo.Delete(dctx, r.ref(s.b))
}
