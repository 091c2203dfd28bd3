package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Unchanged says, without building the desired object, whether the child obj names (its TypeMeta,
// namespace and name set) is still what this Applier last applied or verified for owner with the applied
// digest digest: the check Apply makes of a child cached slim, with no request and no conversion. On
// true, obj holds the cached slim copy (metadata and status: what a step reads of the child).
//
// A reconciler that remembers the digest of what it applied for its owner's current generation calls it
// to skip building a costly desired object (a rendered config) when nothing changed. False means only
// "not known unchanged": build the object and Apply it, which compares, repairs or creates as usual. A
// child cached whole, missing, of another owner, or changed by someone else is never Unchanged.
func (a *Applier) Unchanged(ctx context.Context, owner, obj client.Object, digest string) (bool, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	want := parseDigest(digest)
	if gvk.Kind == "" || want == 0 {
		return false, nil
	}
	switch err := a.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	// Get may clear TypeMeta; the record and the caller need the kind.
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	content, isShared, slim := slimMark(obj)
	if !slim || Conflict(obj, obj, owner) != nil {
		return false, nil
	}
	return a.known(owner, obj, childKey(gvk, obj.GetName()), want, content, isShared), nil
}
