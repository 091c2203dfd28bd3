package testutil

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// WriteCounter counts the write requests a manager's client sends, by namespace (a Namespace's by its own
// name), so that an envtest spec can count the writes to its own objects while the objects of earlier specs
// settle in the background. Pass NewClient as ctrl.Options.NewClient.
type WriteCounter struct {
	mu  sync.Mutex
	n   map[string]int
	log map[string][]string
}

func (w *WriteCounter) add(obj any) {
	key, what := "", fmt.Sprintf("%T", obj)
	if o, ok := obj.(interface{ GetNamespace() string }); ok {
		key = o.GetNamespace()
	}
	if o, ok := obj.(interface{ GetName() string }); ok {
		what += " " + o.GetName()
		if k, ok := obj.(interface{ GetKind() string }); ok && k.GetKind() == "Namespace" {
			key = o.GetName()
		}
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		key = ns.Name
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n, w.log = map[string]int{}, map[string][]string{}
	}
	w.n[key]++
	w.log[key] = append(w.log[key], what)
}

// In is the number of write requests so far to objects in (or being) any of namespaces.
func (w *WriteCounter) In(namespaces ...string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ns := range namespaces {
		n += w.n[ns]
	}
	return n
}

// Since lists the writes to objects in namespace ns after the first n (a value of In), the type and name
// of each, for failure messages.
func (w *WriteCounter) Since(ns string, n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log[ns][min(n, len(w.log[ns])):]...)
}

// NewClient is a client for cfg with every write request it sends counted, status writes included.
func (w *WriteCounter) NewClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, opts)
	if err != nil {
		return nil, err
	}
	counted := interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			w.add(o)
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			w.add(o)
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.add(o)
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			w.add(o)
			return c.Apply(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			w.add(o)
			return c.Delete(ctx, o, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteAllOfOption) error {
			w.add(o)
			return c.DeleteAllOf(ctx, o, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, o, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			w.add(o)
			return c.SubResource(sub).Create(ctx, o, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(o)
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(o)
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
	return counted, nil
}
