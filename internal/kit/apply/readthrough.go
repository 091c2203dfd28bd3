package apply

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ReadThrough is a client whose reads go to the API server (Reader) and whose writes go through Client
// (the manager's, and so through tests' write counters). An Applier over it applies objects the cache must
// not hold, such as Secrets: a typed read through the cache would start an informer holding every
// Secret's data.
type ReadThrough struct {
	client.Client
	Reader client.Reader
}

// Get reads obj from the API server, with its kind set as the cache would set it (Apply compares it).
func (c ReadThrough) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
