package reconcile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Finalizer is one finalizer a controller puts on its objects, for something outside the object's
// namespace or outside Kubernetes that must be cleaned up before the object goes (a Domain's objects in
// the gateway namespace, a database on a server).
//
// Both writes are merge patches of the finalizer list alone, guarded by the object's resourceVersion (an
// optimistic lock): the operator never applies the object itself, so the user's labels, annotations and
// spec are never sent, and a finalizer another controller added or removed in between is never
// overwritten; the Conflict that comes back instead is returned, and the reconcile is retried.
type Finalizer struct {
	// Client sends the patches.
	Client client.Client
	// Name is the finalizer, e.g. "homelab.mortenolsen.pro/domain".
	Name string
}

// Has says whether obj carries the finalizer.
func (f Finalizer) Has(obj client.Object) bool {
	return controllerutil.ContainsFinalizer(obj, f.Name)
}

// Ensure adds the finalizer to obj when it lacks it; obj then holds the patched object. Add it before
// anything is made that the finalizer cleans up, and stop the reconcile when Ensure fails: an object that
// is already gone (NotFound, which client.IgnoreNotFound turns into success) must not get children.
func (f Finalizer) Ensure(ctx context.Context, obj client.Object) error {
	if f.Has(obj) {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, f.Name)
	if err := f.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		controllerutil.RemoveFinalizer(obj, f.Name)
		return fmt.Errorf("add finalizer %s: %w", f.Name, err)
	}
	return nil
}

// Release removes the finalizer from obj once its cleanup is done (or given up). An object already gone
// is released: there is nothing left to hold.
func (f Finalizer) Release(ctx context.Context, obj client.Object) error {
	if !f.Has(obj) {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, f.Name)
	err := f.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer %s: %w", f.Name, err)
	}
	return nil
}

// Finalize is the deletion path of obj: when it carries the finalizer, cleanup runs, and the finalizer
// is released once cleanup succeeds or finds what it cleans up already gone (an error that is NotFound:
// a missing dependency must never hold the finalizer forever). Any other error of cleanup is returned
// and the finalizer kept, so the reconcile is retried. It says whether obj is free to go (the finalizer
// released now, or absent: cleanup does not run then).
func (f Finalizer) Finalize(ctx context.Context, obj client.Object, cleanup func(context.Context) error) (bool, error) {
	if !f.Has(obj) {
		return true, nil
	}
	if err := cleanup(ctx); err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	if err := f.Release(ctx, obj); err != nil {
		return false, err
	}
	return true, nil
}
