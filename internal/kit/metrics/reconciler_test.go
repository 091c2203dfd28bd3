package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
)

func TestErrorReason(t *testing.T) {
	gr := schema.GroupResource{Group: "homelab.mortenolsen.pro", Resource: "domains"}
	weird := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Reason: "user-secret-in-reason", Code: 499}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"conflict", apierrors.NewConflict(gr, "d", errors.New("changed")), "Conflict"},
		{"wrapped not found", fmt.Errorf("read: %w", apierrors.NewNotFound(gr, "d")), "NotFound"},
		{"forbidden", apierrors.NewForbidden(gr, "d", errors.New("no")), "Forbidden"},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), "TooManyRequests"},
		{"server timeout", apierrors.NewServerTimeout(gr, "get", 1), "ServerTimeout"},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Domain"}, "d", nil), "Invalid"},
		{"no status", errors.New("dial tcp: refused"), ReasonOther},
		{"context", context.DeadlineExceeded, ReasonOther},
		// An aggregated API or a webhook may answer with any reason: it must not become a label value.
		{"made-up reason", weird, ReasonOther},
	}
	for _, tt := range tests {
		if got := ErrorReason(tt.err); got != tt.want {
			t.Errorf("%s: ErrorReason = %q, want %q", tt.name, got, tt.want)
		}
	}
}

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

func TestInstrumentCountsErrors(t *testing.T) {
	gr := schema.GroupResource{Resource: "redisconnections"}
	var next error
	inner := reconcilerFunc(func(context.Context, ctrl.Request) (ctrl.Result, error) {
		return ctrl.Result{RequeueAfter: time.Second}, next
	})
	r := Instrument(RedisConnection, reader(), inner)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "r"}}
	conflicts := reconcileErrors.WithLabelValues("RedisConnection", "Conflict")
	others := reconcileErrors.WithLabelValues("RedisConnection", ReasonOther)
	c0, o0 := testutil.ToFloat64(conflicts), testutil.ToFloat64(others)

	for _, err := range []error{nil, apierrors.NewConflict(gr, "r", errors.New("x")), errors.New("boom"), nil} {
		next = err
		res, got := r.Reconcile(context.Background(), req)
		if !errors.Is(got, err) || res.RequeueAfter != time.Second {
			t.Fatalf("the wrapper changed the result: %v, %v", res, got)
		}
	}
	if d := testutil.ToFloat64(conflicts) - c0; d != 1 {
		t.Errorf("Conflict counted %v times, want 1", d)
	}
	if d := testutil.ToFloat64(others) - o0; d != 1 {
		t.Errorf("Other counted %v times, want 1", d)
	}
}

// readyCount is how many durations kind's histogram holds, and their sum.
func readyCount(t *testing.T, kind string) (uint64, float64) {
	t.Helper()
	m := &dto.Metric{}
	if err := readyDuration.WithLabelValues(kind).(interface{ Write(*dto.Metric) error }).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func redisAt(gen int64, created time.Duration, conds ...metav1.Condition) *homelabv1.RedisConnection {
	m := objectMeta("a", "r", created)
	m.Generation = gen
	for i := range conds {
		conds[i].ObservedGeneration = gen
	}
	return &homelabv1.RedisConnection{ObjectMeta: m, Status: homelabv1.RedisConnectionStatus{Conditions: conds}}
}

// observedAt sets the generation o's conditions were written for.
func observedAt(o *homelabv1.RedisConnection, gen int64) *homelabv1.RedisConnection {
	for i := range o.Status.Conditions {
		o.Status.Conditions[i].ObservedGeneration = gen
	}
	return o
}

// The tracker's cases, each on a kind of its own (a fresh tracker) so that their observations add up
// only to what the case did.
func TestReadyTracker(t *testing.T) {
	ready := func(since time.Duration) metav1.Condition { return cond("Ready", metav1.ConditionTrue, "Ready", since) }
	notReady := func(since time.Duration) metav1.Condition {
		return cond("Ready", metav1.ConditionFalse, "Unreachable", since)
	}
	type step struct {
		obj       *homelabv1.RedisConnection
		at        time.Duration // before clock
		reconcile bool          // the wrapper's see and observe; false: a scrape's observe
	}
	tests := []struct {
		name  string
		steps []step
		want  []float64 // durations observed, in seconds
	}{
		{"created, then Ready: from the creation to Ready's transition", []step{
			{redisAt(1, 10*time.Minute), 10 * time.Minute, true},
			{redisAt(1, 10*time.Minute, notReady(9*time.Minute)), 9 * time.Minute, true},
			{redisAt(1, 10*time.Minute, ready(4*time.Minute)), 0, false},
			{redisAt(1, 10*time.Minute, ready(4*time.Minute)), 0, false}, // observed once only
		}, []float64{360}},
		{"first seen Ready after a restart: not observed", []step{
			{redisAt(3, time.Hour, ready(30*time.Minute)), 0, true},
			{redisAt(3, time.Hour, ready(30*time.Minute)), 0, false},
		}, nil},
		{"a new generation: from when it was first seen to Ready", []step{
			{redisAt(1, time.Hour, ready(50*time.Minute)), 20 * time.Minute, true},
			{observedAt(redisAt(2, time.Hour, ready(50*time.Minute)), 1), 15 * time.Minute, true},
			{redisAt(2, time.Hour, notReady(14*time.Minute)), 14 * time.Minute, true},
			{redisAt(2, time.Hour, ready(5*time.Minute)), 0, false},
		}, []float64{600}},
		{"a new generation Ready all along: until it is seen Ready for it", []step{
			{redisAt(1, time.Hour, ready(50*time.Minute)), 20 * time.Minute, true},
			{observedAt(redisAt(2, time.Hour, ready(50*time.Minute)), 1), 15 * time.Minute, true},
			{redisAt(2, time.Hour, ready(50*time.Minute)), 14 * time.Minute, false},
		}, []float64{60}},
		{"Ready for an older generation only: not observed", []step{
			{redisAt(1, time.Hour, notReady(time.Hour)), 20 * time.Minute, true},
			{observedAt(redisAt(2, time.Hour, ready(time.Minute)), 1), 0, false},
		}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := newKind(fmt.Sprintf("TrackerCase%d", i), "test", RedisConnection.newObject, RedisConnection.newList, RedisConnection.status)
			for _, s := range tt.steps {
				now := clock.Add(-s.at)
				st := kind.status(s.obj)
				if s.reconcile {
					kind.ready.see(s.obj, st, now)
				}
				kind.ready.observe(kind.Name, s.obj, st, now)
			}
			n, sum := readyCount(t, kind.Name)
			var want float64
			for _, w := range tt.want {
				want += w
			}
			if int(n) != len(tt.want) || sum != want {
				t.Errorf("observed %d durations summing to %vs, want %v", n, sum, tt.want)
			}
		})
	}
}

// The wrapper reads each object before its reconcile: it makes an entry per object and drops it once the
// object is gone, so the tracker holds no more than the live objects.
func TestInstrumentTracksLiveObjectsOnly(t *testing.T) {
	kind := newKind("TrackerLive", "test", RedisConnection.newObject, RedisConnection.newList, RedisConnection.status)
	obj := redisAt(1, time.Minute)
	c := reader(obj)
	r := Instrument(kind, c, reconcilerFunc(func(context.Context, ctrl.Request) (ctrl.Result, error) { return ctrl.Result{}, nil }))
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if kind.ready.len() != 1 {
		t.Fatalf("%d entries after a reconcile of one object, want 1", kind.ready.len())
	}
	if err := c.(client.Client).Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if kind.ready.len() != 0 {
		t.Errorf("%d entries once the object is gone, want 0", kind.ready.len())
	}
}
