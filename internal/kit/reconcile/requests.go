package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListRequests is the body of a watch's map function: it lists list's kind from c with opts (an index,
// a namespace) and returns a reconcile request for each item. A map function cannot return an error, so
// the caller logs err and maps to nothing; the requests are nil then.
func ListRequests(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) ([]ctrl.Request, error) {
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	reqs := make([]ctrl.Request, 0, meta.LenList(list))
	err := meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return reqs, nil
}
