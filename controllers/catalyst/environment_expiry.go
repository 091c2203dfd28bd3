package catalyst

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments,verbs=delete

// expiryConflictRetry is how soon an expired environment whose deletion lost a race with a change is
// looked at again (the change's own event usually comes first).
const expiryConflictRetry = time.Second

// expiryMark is the expiry computed for one generation of an Environment.
type expiryMark struct {
	uid        types.UID
	generation int64
	expires    metav1.Time
}

// now is the reconciler's clock: Now, else time.Now.
func (r *EnvironmentReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// reconcileExpiry deletes a preview whose spec.expireAfter has passed since the operator first observed
// its current generation (status.expiresAt), so that every spec change extends it. Until then it asks to
// be reconciled at the expiry time. The deletion is guarded by the resourceVersion the reconcile read: a
// change made meanwhile wins and extends the environment. It then goes through the finalizer like any
// deletion (the namespace is deleted first); the other steps make nothing more for it.
func (r *EnvironmentReconciler) reconcileExpiry(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	after := s.env.Spec.ExpireAfter
	if after == nil || after.Duration <= 0 {
		s.status.ExpiresAt = nil
		return ctrl.Result{}, nil
	}
	now := r.now()
	expires := s.env.Status.ExpiresAt
	if expires == nil || s.env.Status.ObservedGeneration != s.env.Generation {
		// Whole seconds, as the API server keeps it: the requeue then matches what status shows.
		t := metav1.NewTime(now.Add(after.Duration)).Rfc3339Copy()
		expires = &t
		key := client.ObjectKeyFromObject(s.env)
		mark := expiryMark{uid: s.env.UID, generation: s.env.Generation, expires: t}
		if last, ok := r.expiries.Load(key); ok && last.(expiryMark).uid == mark.uid && last.(expiryMark).generation == mark.generation {
			// Computed by a reconcile whose status write the cache has not shown this one yet.
			t = last.(expiryMark).expires
		} else {
			r.expiries.Store(key, mark)
		}
	}
	s.status.ExpiresAt = expires
	if left := expires.Sub(now); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}

	s.Normalf(catalystv1.EventExpired,
		"Environment expired at %s (spec.expireAfter %s after its last change): deleting it",
		expires.UTC().Format(time.RFC3339), after.Duration)
	err := r.Client.Delete(ctx, s.env, client.Preconditions{UID: &s.env.UID, ResourceVersion: &s.env.ResourceVersion})
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: expiryConflictRetry}, nil
	case client.IgnoreNotFound(err) != nil:
		return ctrl.Result{}, fmt.Errorf("delete expired environment: %w", err)
	}
	s.expired = true
	return ctrl.Result{}, nil
}
