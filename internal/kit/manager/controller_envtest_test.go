package manager_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// reconcileFunc is a reconciler of the ConfigMaps of one namespace (the others' are ignored).
type reconcileFunc struct {
	namespace string
	do        func(ctx context.Context) error
}

func (r reconcileFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace != r.namespace {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.do(ctx)
}

// runController runs a manager built by manager.New with opts and one row, a ConfigMap controller set up
// as every reconciler is (manager.ControllerOptions), reconciling a ConfigMap made in a namespace of its
// own with do. It stops the manager when the test ends.
func runController(t *testing.T, opts *manager.Options, env *testenv.Env, do func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ns, err := testenv.CreateNamespace(ctx, env.Client, "kitmgr")
	if err != nil {
		t.Fatal(err)
	}
	r := reconcileFunc{namespace: ns, do: do}
	row := manager.Reconciler{Name: "ConfigMap", Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
		return ctrl.NewControllerManagedBy(mgr).Named("kitmgr-" + ns).For(&corev1.ConfigMap{}).
			WithOptions(manager.ControllerOptions(mgr, 1)).Complete(r)
	}}
	mgr, err := manager.New(env.Config, *opts, platform.Capabilities{}, manager.NewGroup("test", row))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}); err != nil {
		t.Fatal(err)
	}
}

// TestControllerOptionsReachControllers: the manager's reconcile timeout (controller-runtime's
// Controller.ReconciliationTimeout, --reconcile-timeout) and retry back-off (Options.Retry, --retry-*)
// reach a controller set up as every reconciler is, against a real API server; each with the default as
// its control, so the test can tell the option from its absence.
func TestControllerOptionsReachControllers(t *testing.T) {
	env := sharedEnv

	// waitForContext reports what ends the reconcile's wait: its context's error, or nil when the context
	// was still live after patience.
	waitForContext := func(got chan<- error, patience time.Duration) func(ctx context.Context) error {
		var once sync.Once
		return func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				once.Do(func() { got <- ctx.Err() })
			case <-time.After(patience):
				once.Do(func() { got <- nil })
			}
			return nil
		}
	}
	t.Run("a reconcile past the timeout sees its context cancelled", func(t *testing.T) {
		opts := testenv.ManagerOptions(nil)
		opts.Controller.ReconciliationTimeout = 300 * time.Millisecond
		got := make(chan error, 1)
		start := time.Now()
		runController(t, &opts, env, waitForContext(got, 20*time.Second))
		select {
		case err := <-got:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("the reconcile's context ended with %v, want the deadline exceeded", err)
			}
		case <-time.After(testenv.EventuallyTimeout):
			t.Fatalf("no reconcile in %s", time.Since(start))
		}
	})
	t.Run("control: without a timeout the context stays live", func(t *testing.T) {
		opts := testenv.ManagerOptions(nil)
		got := make(chan error, 1)
		runController(t, &opts, env, waitForContext(got, 2*time.Second))
		select {
		case err := <-got:
			if err != nil {
				t.Errorf("the reconcile's context ended with %v though no timeout was set", err)
			}
		case <-time.After(testenv.EventuallyTimeout):
			t.Fatal("no reconcile")
		}
	})

	// failures records when each failing reconcile started, until it has n of them.
	failures := func(n int) (func(context.Context) error, <-chan []time.Time) {
		var mu sync.Mutex
		var at []time.Time
		out := make(chan []time.Time, 1)
		return func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Now())
			if len(at) == n {
				out <- at
			}
			return errors.New("failing on purpose")
		}, out
	}
	gaps := func(t *testing.T, opts manager.Options, n int) []time.Duration {
		t.Helper()
		do, out := failures(n)
		runController(t, &opts, env, do)
		select {
		case at := <-out:
			var d []time.Duration
			for i := 1; i < len(at); i++ {
				d = append(d, at[i].Sub(at[i-1]))
			}
			return d
		case <-time.After(testenv.EventuallyTimeout):
			t.Fatalf("fewer than %d reconciles", n)
			return nil
		}
	}
	t.Run("a failing reconcile is retried with the back-off", func(t *testing.T) {
		opts := testenv.ManagerOptions(nil)
		opts.Retry = manager.Retry{BaseDelay: 200 * time.Millisecond, MaxDelay: 400 * time.Millisecond}
		d := gaps(t, opts, 5) // 200ms, 400ms, then 400ms (the max) where doubling would give 800ms, 1.6s
		for i, gap := range d {
			if gap < 190*time.Millisecond {
				t.Errorf("retry %d came %s after the last failure, before the base delay", i+1, gap)
			}
		}
		if d[1] < 390*time.Millisecond {
			t.Errorf("the second retry came %s after the first, want it doubled to 400ms", d[1])
		}
		if d[3] > 700*time.Millisecond {
			t.Errorf("the fourth retry came %s after the third, past the 400ms max delay", d[3])
		}
	})
	t.Run("control: the default back-off retries within milliseconds", func(t *testing.T) {
		d := gaps(t, testenv.ManagerOptions(nil), 3) // 5ms, 10ms
		if d[0] > 150*time.Millisecond {
			t.Errorf("the first retry came %s after the failure with the default 5ms back-off", d[0])
		}
	})
}
