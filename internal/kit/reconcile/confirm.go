package reconcile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Accepted reads the object key names from cached and says whether accept takes it (accept gets nil
// when there is no such object). A refusal is confirmed against live, when it is not nil, before it
// stands: an object created or changed a moment before may not be in the manager's cache yet, and an
// admission webhook must not refuse for the cache's lag. A read that fails otherwise is returned.
func Accepted[T client.Object](ctx context.Context, cached, live client.Reader, key client.ObjectKey, newObj func() T, accept func(T) bool) (bool, error) {
	for _, r := range []client.Reader{cached, live} {
		if r == nil {
			continue
		}
		obj := newObj()
		err := r.Get(ctx, key, obj)
		switch {
		case apierrors.IsNotFound(err):
			var none T
			obj = none
		case err != nil:
			return false, fmt.Errorf("read %s: %w", key, err)
		}
		if accept(obj) {
			return true, nil
		}
	}
	return false, nil
}
