package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

func TestSoonest(t *testing.T) {
	after := func(d time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: d} }
	tests := []struct {
		name string
		a, b ctrl.Result
		want ctrl.Result
	}{
		{"neither requeues", ctrl.Result{}, ctrl.Result{}, ctrl.Result{}},
		{"only the first", after(time.Minute), ctrl.Result{}, after(time.Minute)},
		{"only the second", ctrl.Result{}, after(time.Second), after(time.Second)},
		{"the sooner of two", after(time.Minute), after(time.Second), after(time.Second)},
		{"the sooner of two, other order", after(time.Second), after(time.Minute), after(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Soonest(tt.a, tt.b); got != tt.want {
				t.Errorf("Soonest = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	errA, errB := errors.New("a failed"), errors.New("b failed")
	var ran []string
	step := func(name string, res ctrl.Result, err error) Step[*[]string] {
		return func(_ context.Context, log *[]string) (ctrl.Result, error) {
			*log = append(*log, name)
			return res, err
		}
	}
	res, err := Run(context.Background(), &ran,
		step("a", ctrl.Result{}, errA),
		step("b", ctrl.Result{RequeueAfter: time.Minute}, nil),
		step("c", ctrl.Result{RequeueAfter: time.Second}, errB),
		step("d", ctrl.Result{}, nil),
	)
	if len(ran) != 4 {
		t.Errorf("ran %v, want every step even after failures", ran)
	}
	if !errors.Is(err, errA) || !errors.Is(err, errB) {
		t.Errorf("err = %v, want both step errors", err)
	}
	if res.RequeueAfter != time.Second {
		t.Errorf("requeue after %s, want the soonest (1s)", res.RequeueAfter)
	}
	if res, err := Run[*[]string](context.Background(), &ran); err != nil || !res.IsZero() {
		t.Errorf("no steps: %+v, %v", res, err)
	}
}
