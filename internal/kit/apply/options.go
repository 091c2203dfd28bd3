package apply

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options changes where one ApplyWith reads the live object and through whom it writes; the zero value
// is Apply: the Applier's cache (and Reader), its Client, a real write.
type Options struct {
	// Writer sends the apply request instead of the Applier's Client. Objects that come from a tenant's
	// content are sent as the tenant (an impersonating client), so that the API server's RBAC and
	// admission decide what is written.
	Writer client.Writer
	// Live reads the live object instead of the Applier's cache: for objects of any kind, which the
	// operator neither caches nor may read itself. It must ask the API server before it reports an object
	// missing (a NotFound error): a missing object is then sent create-only, and one someone made in
	// between is a *ConflictError. Its other errors are returned as they are. An object read through Live
	// is compared in full every time: nothing is remembered of it (no slim copies, no records).
	Live LiveReader
	// DryRun sends the request as a server-side dry run: the API server admits or refuses the object and
	// writes nothing. A new object is then sent as a plain apply (a dry run takes over nothing), and the
	// answer is not copied into desired.
	DryRun bool
}

// LiveReader reads the live object of kind gvk named key, or returns a NotFound error.
type LiveReader func(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error)

// checkLive is check for Options.Live: the live object is read through live and judged as check judges
// a whole cached one (Conflict, then holds).
func (a *Applier) checkLive(ctx context.Context, owner, desired client.Object, live LiveReader) (*unstructured.Unstructured, Result, bool, error) {
	want, err := ToUnstructured(desired)
	if err != nil {
		return nil, "", true, err
	}
	gvk := want.GroupVersionKind()
	if gvk.Kind == "" {
		return nil, "", true, fmt.Errorf("apply %T %s: TypeMeta is not set", desired, client.ObjectKeyFromObject(desired))
	}
	cur, err := live(ctx, gvk, client.ObjectKeyFromObject(desired))
	switch {
	case apierrors.IsNotFound(err):
		return want, Created, false, nil
	case err != nil:
		return nil, "", true, err
	}
	if c := Conflict(cur, desired, owner); c != nil {
		return nil, "", true, c
	}
	if holds(cur, cur.Object, want) {
		return nil, Unchanged, true, setLive(desired, cur.Object)
	}
	return want, Updated, false, nil
}

// ReadFrom is the LiveReader that reads the live object from r (a manager's API reader: the API
// server, never a cache), for objects whose data the operator does not cache, such as Secrets.
func ReadFrom(r client.Reader) LiveReader {
	return func(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := r.Get(ctx, key, u); err != nil {
			return nil, err
		}
		return u, nil
	}
}
