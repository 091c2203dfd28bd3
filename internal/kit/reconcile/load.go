package reconcile

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Load is the one start of a Reconcile: it reads the owner named key into obj. found is false when
// there is nothing to reconcile: the owner is gone (err is nil, and every forget is called with key, so
// that the memos a controller keeps per owner, such as the applier's records and the status writer's
// last write, do not outlive it) or the read failed (err says why; nothing is forgotten, the owner may
// well still exist).
func Load(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object, forget ...func(types.NamespacedName)) (found bool, err error) {
	err = c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		for _, f := range forget {
			f(key)
		}
		return false, nil
	}
	return err == nil, err
}
