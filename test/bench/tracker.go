package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

// tracker watches one namespace, as a client of the API server would, and notes when each of a workload's
// objects converges and when each edit reaches its stages; the workload's Observer says what an event
// means.
type tracker struct {
	cache  cache.Cache
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	obs       Observer
	objs      map[string]*objState
	converged int
	target    int
	reached   chan struct{} // closed when converged reaches target
	lastAt    time.Time     // when the last object converged

	writtenLatency, appliedLatency []time.Duration
}

type objState struct {
	converged bool
	edit      *edit
}

// edit is one spec change under way.
type edit struct {
	at      time.Time
	written time.Duration // when it reached its first stage, after at; 0 until then
}

func newTracker(ctx context.Context, cfg *rest.Config, namespace string, obs Observer) (*tracker, error) {
	watches := obs.Watches()
	byObject := map[client.Object]cache.ByObject{}
	for _, w := range watches {
		if w.Selector != nil || w.AllNamespaces {
			bo := cache.ByObject{Label: w.Selector}
			if w.AllNamespaces {
				bo.Namespaces = map[string]cache.Config{cache.AllNamespaces: {}}
			}
			byObject[w.Object] = bo
		}
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            scheme.Scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject:          byObject,
	})
	if err != nil {
		return nil, err
	}
	t := &tracker{cache: c, obs: obs, objs: map[string]*objState{}, done: make(chan struct{})}
	for _, w := range watches {
		inf, err := c.GetInformer(ctx, w.Object)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { t.observe(o.(client.Object)) },
			UpdateFunc: func(_, o any) { t.observe(o.(client.Object)) },
		}); err != nil {
			return nil, err
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	go func() {
		defer close(t.done)
		_ = c.Start(runCtx)
	}()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("tracker: cache did not sync")
	}
	return t, nil
}

func (t *tracker) stop() {
	t.cancel()
	<-t.done
}

// entry is m's entry for name, made (zero) the first time it is asked for: each workload's observer keeps
// one per object as the tracker does.
func entry[S any](m map[string]*S, name string) *S {
	s := m[name]
	if s == nil {
		s = new(S)
		m[name] = s
	}
	return s
}

func (t *tracker) state(name string) *objState {
	return entry(t.objs, name)
}

// expect resets the convergence count: reached closes once n objects have converged.
func (t *tracker) expect(n int) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.target, t.reached = n, make(chan struct{})
	t.check()
	return t.reached
}

func (t *tracker) convergedCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.converged
}

func (t *tracker) lastConverged() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastAt
}

func (t *tracker) check() {
	if t.reached != nil && t.converged >= t.target {
		select {
		case <-t.reached:
		default:
			close(t.reached)
		}
	}
}

// observe hands one event to the Observer and notes what it says.
func (t *tracker) observe(o client.Object) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.obs.Observe(o)
	if p.Name == "" {
		return
	}
	s := t.state(p.Name)
	if e := s.edit; e != nil {
		if e.written == 0 && p.Written {
			e.written = now.Sub(e.at)
		}
		if e.written != 0 && p.Applied {
			t.writtenLatency = append(t.writtenLatency, e.written)
			t.appliedLatency = append(t.appliedLatency, now.Sub(e.at))
			s.edit = nil
		}
	}
	if !s.converged && p.Converged {
		s.converged = true
		t.converged++
		t.lastAt = now
		t.check()
	}
}

// errEditPending is startEdit's refusal of an object whose earlier edit is not applied yet.
var errEditPending = errors.New("edited again before its last edit was applied")

// startEdit notes that object name is about to get edit seq; it refuses (errEditPending) when an earlier
// edit of the same object has not been applied yet: the churn then edits another object.
func (t *tracker) startEdit(name string, seq int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.state(name)
	if s.edit != nil {
		return fmt.Errorf("%s %w", name, errEditPending)
	}
	s.edit = &edit{at: time.Now()}
	t.obs.StartEdit(name, seq)
	return nil
}

// latencies returns the finished edits' latencies to their first stage and to applied, and how many
// edits are still outstanding.
func (t *tracker) latencies() (written, applied []time.Duration, pending int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.objs {
		if s.edit != nil {
			pending++
		}
	}
	written = append([]time.Duration(nil), t.writtenLatency...)
	applied = append([]time.Duration(nil), t.appliedLatency...)
	return written, applied, pending
}

// percentile is the p-th percentile (0-100) of ds by the nearest-rank method; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s)) + 0.999999)
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}
