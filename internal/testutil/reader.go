package testutil

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CountingReader counts the Get requests that pass through it to Reader: the reads a test pins down (a
// read the cache should have saved, or one a create-only apply should not need).
type CountingReader struct {
	client.Reader
	Gets int
}

// Get counts the request and passes it on.
func (r *CountingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.Gets++
	return r.Reader.Get(ctx, key, obj, opts...)
}
