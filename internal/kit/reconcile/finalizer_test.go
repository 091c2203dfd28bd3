package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

const testFinalizer = "test.platform-operator.io/cleanup"

func TestFinalizerEnsure(t *testing.T) {
	ctx := context.Background()
	c, writes := countingClient(t)
	f := Finalizer{Client: c, Name: testFinalizer}
	n := read(t, c, newNetwork(t, c, newNamespace(t, c)))

	if err := f.Ensure(ctx, n); err != nil || !f.Has(n) {
		t.Fatalf("Ensure: %v, finalizers %v", err, n.Finalizers)
	}
	if got := read(t, c, n); !slices.Contains(got.Finalizers, testFinalizer) {
		t.Fatalf("the API server has %v", got.Finalizers)
	}
	before := writes.Load()
	if err := f.Ensure(ctx, n); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load() - before; n != 0 {
		t.Errorf("%d writes to add a finalizer already there, want 0", n)
	}

	// Hostile: another controller added its finalizer since this copy was read. The lock refuses the
	// patch rather than sending a list without theirs; the positive control, the fresh copy, succeeds.
	g := Finalizer{Client: c, Name: "other.example.com/theirs"}
	stale := n.DeepCopy()
	if err := g.Ensure(ctx, read(t, c, n)); err != nil {
		t.Fatal(err)
	}
	controllerutil.RemoveFinalizer(stale, testFinalizer)
	other := Finalizer{Client: c, Name: "third.example.com/x"}
	if err := other.Ensure(ctx, stale); !apierrors.IsConflict(err) {
		t.Errorf("Ensure on a stale copy: %v, want a Conflict", err)
	}
	if other.Has(stale) {
		t.Error("a refused Ensure left the finalizer on the caller's copy")
	}
	if err := other.Ensure(ctx, read(t, c, n)); err != nil {
		t.Errorf("Ensure on a fresh copy: %v", err)
	}
	if got := read(t, c, n).Finalizers; !slices.Equal(got, []string{testFinalizer, "other.example.com/theirs", "third.example.com/x"}) {
		t.Errorf("finalizers %v, want every controller's", got)
	}

	// An object gone is NotFound, which the caller ignores and stops on.
	gone := read(t, c, newNetwork(t, c, newNamespace(t, c)))
	if err := c.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := f.Ensure(ctx, gone); !apierrors.IsNotFound(err) {
		t.Errorf("Ensure on a deleted object: %v, want NotFound", err)
	}
}

func TestFinalizerFinalize(t *testing.T) {
	ctx := context.Background()
	c, writes := countingClient(t)
	f := Finalizer{Client: c, Name: testFinalizer}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "databases"}, "db")
	tests := []struct {
		name     string
		cleanup  error
		released bool
		wantErr  bool
	}{
		{"cleanup done", nil, true, false},
		{"the dependency already gone counts as done", fmt.Errorf("drop: %w", notFound), true, false},
		{"cleanup failed: the finalizer holds", errors.New("server unreachable"), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := read(t, c, newNetwork(t, c, newNamespace(t, c)))
			if err := f.Ensure(ctx, n); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(ctx, n); err != nil {
				t.Fatal(err)
			}
			n = read(t, c, n) // deletionTimestamp set, held by the finalizer
			ran := 0
			released, err := f.Finalize(ctx, n, func(context.Context) error { ran++; return tt.cleanup })
			if released != tt.released || (err != nil) != tt.wantErr || ran != 1 {
				t.Fatalf("Finalize = %v, %v after %d cleanups; want %v, error %v, one cleanup", released, err, ran, tt.released, tt.wantErr)
			}
			err = c.Get(ctx, client.ObjectKeyFromObject(n), &ircv1.ErgoNetwork{})
			if tt.released && !apierrors.IsNotFound(err) {
				t.Errorf("released, but the object is still there: %v", err)
			}
			if !tt.released && (err != nil || !f.Has(read(t, c, n))) {
				t.Errorf("not released, but the object or its finalizer is gone: %v", err)
			}
			if tt.released {
				// Gone: a second Finalize from the stale copy runs no cleanup and releases nothing.
				before := writes.Load()
				n.Finalizers = nil
				if released, err := f.Finalize(ctx, n, func(context.Context) error { ran++; return nil }); !released || err != nil || ran != 1 {
					t.Errorf("Finalize without the finalizer = %v, %v, %d cleanups", released, err, ran)
				}
				if w := writes.Load() - before; w != 0 {
					t.Errorf("%d writes without a finalizer to release", w)
				}
			}
		})
	}
}

func TestFinalizerReleaseGone(t *testing.T) {
	ctx := context.Background()
	c, _ := countingClient(t)
	f := Finalizer{Client: c, Name: testFinalizer}
	n := read(t, c, newNetwork(t, c, newNamespace(t, c)))
	if err := f.Ensure(ctx, n); err != nil {
		t.Fatal(err)
	}
	// Another worker released it and the object went meanwhile: this copy still shows the finalizer.
	stale := n.DeepCopy()
	if err := c.Delete(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(ctx, read(t, c, n)); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(ctx, stale); err != nil {
		t.Errorf("Release of an object already gone: %v, want success", err)
	}
	// The positive control: a Conflict (the object is still there, changed) is not success.
	live := read(t, c, newNetwork(t, c, newNamespace(t, c)))
	if err := f.Ensure(ctx, live); err != nil {
		t.Fatal(err)
	}
	old := live.DeepCopy()
	if err := (Finalizer{Client: c, Name: "other.example.com/theirs"}).Ensure(ctx, live); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(ctx, old); !apierrors.IsConflict(err) {
		t.Errorf("Release on a stale copy: %v, want a Conflict", err)
	}
}
