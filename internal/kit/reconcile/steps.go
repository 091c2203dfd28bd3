package reconcile

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Step is one small part of a reconcile: it works on the reconcile's scope S and says whether it wants
// the object requeued, and after how long.
type Step[S any] func(context.Context, S) (ctrl.Result, error)

// Run runs every step in order, even after one fails, so that the status reports every part: a part that
// cannot be applied does not hide the state of the others. Errors are joined; the result asks for the
// soonest requeue any step asked for.
func Run[S any](ctx context.Context, s S, steps ...Step[S]) (ctrl.Result, error) {
	var (
		res  ctrl.Result
		errs []error
	)
	for _, step := range steps {
		r, err := step(ctx, s)
		if err != nil {
			errs = append(errs, err)
		}
		res = Soonest(res, r)
	}
	return res, errors.Join(errs...)
}

// Soonest combines two results: the one that requeues soonest, where a zero RequeueAfter means no
// requeue at all (cluster-api's LowestNonZeroResult). Controllers here never use the deprecated Requeue
// flag, so only RequeueAfter counts.
func Soonest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter != 0 && b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}
