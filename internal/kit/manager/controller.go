package manager

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Retry is how long a controller waits before reconciling an object again after a reconcile of it
// failed (returned an error): BaseDelay after the first failure, doubling with each failure in a row, never
// more than MaxDelay. A reconcile that succeeds, or returns RequeueAfter, resets the object's count.
type Retry struct {
	BaseDelay, MaxDelay time.Duration
}

// DefaultRetry is controller-runtime's per-object back-off (workqueue.DefaultTypedControllerRateLimiter):
// 5ms doubling up to 1000s. It is what the zero Retry means and the --retry-* flags' defaults.
var DefaultRetry = Retry{BaseDelay: 5 * time.Millisecond, MaxDelay: 1000 * time.Second}

// retryQPS and retryBurst are controller-runtime's default overall limit on a controller's retries
// (10 per second, bursts of 100), which the kit keeps beside the per-object back-off.
const (
	retryQPS   = 10
	retryBurst = 100
)

func (r Retry) validate() error {
	switch {
	case r == Retry{}:
		return nil
	case r.BaseDelay <= 0 || r.MaxDelay <= 0:
		return errors.New("manager: the retry back-off's base and max delay must both be positive")
	case r.MaxDelay < r.BaseDelay:
		return fmt.Errorf("manager: the retry back-off's max delay %s is below its base delay %s", r.MaxDelay, r.BaseDelay)
	}
	return nil
}

// rateLimiter is a controller's rate limiter with the back-off r: controller-runtime's default one with
// r's delays; nil (controller-runtime's default) for the zero Retry.
func (r Retry) rateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	if r == (Retry{}) {
		return nil
	}
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](r.BaseDelay, r.MaxDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(retryQPS), retryBurst)},
	)
}

// kitManager is the manager New returns: controller-runtime's, and the kit's options its controllers take
// (ControllerOptions).
type kitManager struct {
	ctrl.Manager
	retry Retry
}

// ControllerOptions are the options every reconciler's SetupWithManager passes its builder
// (WithOptions): workers objects reconciled at once (at least 1), and the retry back-off of the manager
// New built (Options.Retry; controller-runtime's default for a manager New did not build). Each call
// returns a rate limiter of its own: controllers must not share one.
func ControllerOptions(mgr ctrl.Manager, workers int) controller.Options {
	opts := controller.Options{MaxConcurrentReconciles: max(workers, 1)}
	if m, ok := mgr.(*kitManager); ok {
		opts.RateLimiter = m.retry.rateLimiter()
	}
	return opts
}
