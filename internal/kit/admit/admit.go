// Package admit holds what the operator's validating webhooks share, whatever the API group.
package admit

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// WithRequestNamespace is o with the namespace of the admission request in ctx when o has none: the API
// server fills it in before admission, but a webhook that decides by namespace (a policy, a reference
// to another namespace) must not decide on an empty one. o itself is never changed: the result is a copy
// when a namespace was filled in, o otherwise.
func WithRequestNamespace[T client.Object](ctx context.Context, o T) T {
	if o.GetNamespace() != "" {
		return o
	}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		o = o.DeepCopyObject().(T)
		o.SetNamespace(req.Namespace)
	}
	return o
}
