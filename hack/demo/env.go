package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Env is what a scenario works with: the printer, the cluster's client, where things are, and the
// operator (when one runs).
type Env struct {
	Printer
	// Client talks to the local cluster directly (no cache): what it reads is what the API server has.
	Client client.Client
	// Root is the repository root.
	Root string
	// Namespace is where the scenarios' namespaced objects go.
	Namespace string
	// Timeout bounds each wait (-wait).
	Timeout time.Duration
	// FieldManager is the demo's field owner for what it applies and what it plays.
	FieldManager string
	// OperatorBinary is the operator's binary (-operator): the Jobs the demo runs on this machine run it
	// in place of the image's.
	OperatorBinary string

	operator process     // nil with -skip-operator
	fail     func(error) // reports an error where it happens and makes the demo exit 1
}

// process is the operator process, as far as the waits care: they stop when it exits.
type process interface {
	Done() <-chan struct{}
	Err() error
}

// OperatorRuns says whether an operator reconciles what the scenarios apply (not with -skip-operator).
func (e *Env) OperatorRuns() bool { return e.operator != nil }

// errOperatorExited says the operator process ended while a scenario waited for it.
func (e *Env) errOperatorExited() error {
	select {
	case <-e.operator.Done():
		if err := e.operator.Err(); err != nil {
			return fmt.Errorf("the operator exited on its own: %w", err)
		}
		return errors.New("the operator exited on its own: exit status 0")
	default:
		return nil
	}
}

// Poll reads obj's kind and name afresh every 250ms until done says so, and returns the state done
// last described. It fails when ctx ends, the operator exits, a read fails, or Timeout passes, saying what
// it last saw.
func (e *Env) Poll(ctx context.Context, obj client.Object, done func(client.Object) (bool, string)) (string, error) {
	gvk, err := e.Client.GroupVersionKindFor(obj)
	if err != nil {
		return "", err
	}
	key := client.ObjectKeyFromObject(obj)
	what := gvk.Kind + " " + key.String()
	state := "nothing (no read finished)"
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, e.Timeout, true, func(ctx context.Context) (bool, error) {
		fresh, err := e.Get(ctx, gvk, key)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", what, err)
		}
		var ok bool
		if ok, state = done(fresh); ok {
			return true, nil
		}
		if e.operator != nil {
			return false, e.errOperatorExited()
		}
		return false, nil
	})
	switch {
	case err == nil:
		return state, nil
	case ctx.Err() != nil:
		return state, context.Cause(ctx)
	case wait.Interrupted(err):
		return state, fmt.Errorf("gave up on %s after %s (-wait); it last showed: %s", what, e.Timeout, state)
	}
	return state, fmt.Errorf("%w (%s was %s)", err, what, state)
}

// Get reads the object of kind gvk named key into a new object of its Go type.
func (e *Env) Get(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (client.Object, error) {
	o, err := e.Client.Scheme().New(gvk)
	if err != nil {
		return nil, err
	}
	obj, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", gvk)
	}
	return obj, e.Client.Get(ctx, key, obj)
}

// result is how one scenario went, for the summary.
type result struct {
	name   string
	object string        // "ErgoNetwork default/my-network"
	obj    client.Object // as last read; nil when it could not be
	state  string        // what Ready last said
	ready  time.Duration // from the apply to Ready; 0 when it did not become Ready
	err    error
}

// run plays one scenario: apply, then (with an operator) its steps and the wait for Ready, then Show.
// Errors are reported through e.fail where they happen, so that the output shows them in place.
func (e *Env) run(ctx context.Context, s Scenario) result {
	res := result{name: s.Name}
	failed := func(err error) result {
		res.err = err
		e.fail(err)
		return res
	}
	start := time.Now()
	objs, err := e.objects(s)
	if err != nil {
		return failed(err)
	}
	i := slices.IndexFunc(objs, func(a applied) bool { return a.obj.GroupVersionKind() == s.Follow })
	if i < 0 {
		return failed(fmt.Errorf("scenario %s applies no %s to follow", s.Name, s.Follow.Kind))
	}
	if s.Before != nil && e.OperatorRuns() {
		sample, err := typed(objs[i].obj, e.Client.Scheme())
		if err != nil {
			return failed(err)
		}
		for _, st := range s.Before(sample) {
			if err := st.run(ctx, e, sample); err != nil {
				return failed(err)
			}
		}
	}
	e.Step("Applying the samples (server-side apply as %q)", e.FieldManager)
	if err := e.apply(ctx, objs); err != nil {
		return failed(err)
	}
	key := client.ObjectKeyFromObject(objs[i].obj)
	res.object = s.Follow.Kind + " " + key.String()
	obj, err := e.Get(ctx, s.Follow, key)
	if err != nil {
		return failed(fmt.Errorf("read %s: %w", res.object, err))
	}
	ready := s.Ready
	if ready == nil {
		ready = ConditionTrue(readyCondition)
	}

	if e.OperatorRuns() {
		var steps []Step
		if s.Steps != nil {
			steps = s.Steps(obj)
		}
		steps = append(steps, WaitFor(fmt.Sprintf("Waiting for %s %s to become Ready", s.Follow.Kind, key.Name), ready))
		for _, st := range steps {
			if err := st.run(ctx, e, obj); err != nil {
				res.err = err
				e.fail(err)
				break
			}
		}
		if res.err == nil {
			res.ready = time.Since(start)
		}
	}
	if ctx.Err() != nil {
		return res // stopping: nothing more to read
	}

	fresh, err := e.Get(ctx, s.Follow, key)
	if err != nil {
		err = fmt.Errorf("read %s: %w", res.object, err)
		e.fail(err)
		res.err = cmp.Or(res.err, err)
		return res
	}
	res.obj = fresh
	_, res.state = ready(fresh)
	s.Show(ctx, e, fresh)
	return res
}
