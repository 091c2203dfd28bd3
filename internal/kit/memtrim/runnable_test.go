package memtrim

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

type syncedCache struct{ synced bool }

func (c syncedCache) WaitForCacheSync(context.Context) bool { return c.synced }

type recorder struct {
	mu    sync.Mutex
	calls []time.Time
	lines []string
}

func (r *recorder) trim() (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, time.Now())
	return Result{Before: Status{RSSFile: 50 << 20}, After: Status{RSSFile: 2 << 20}}, nil
}

func (r *recorder) log() logr.Logger {
	return funcr.New(func(prefix, args string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.lines = append(r.lines, args)
	}, funcr.Options{})
}

// busyFor is a CPU clock that spends a whole window's worth of CPU in each of the first windows
// measured, then none.
func busyFor(windows int, window time.Duration) func() (time.Duration, error) {
	var mu sync.Mutex
	var calls int
	var total time.Duration
	return func() (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		// Each window reads the clock twice: before and after.
		if calls%2 == 0 && calls/2 <= windows {
			total += window
		}
		return total, nil
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func TestRunnable(t *testing.T) {
	if !Supported {
		t.Skip("memtrim trims on Linux only; elsewhere Start returns at once")
	}
	closed := make(chan struct{})
	close(closed)
	tests := []struct {
		name      string
		elected   chan struct{}
		electLate bool
		synced    bool
		busy      int
		neverIdle bool
		want      int
	}{
		{name: "elected and idle: one trim after a quiet window", elected: closed, synced: true, want: 1},
		{name: "elected, busy for three windows: one trim after the fourth", elected: closed, synced: true, busy: 3, want: 1},
		{name: "never idle: no trim", elected: closed, synced: true, neverIdle: true, want: 0},
		{name: "a follower trims after FollowerWait, then again once elected", elected: make(chan struct{}), electLate: true, synced: true, want: 2},
		{name: "a follower never elected trims once", elected: make(chan struct{}), synced: true, want: 1},
		{name: "a cache that never syncs (ctx ended): no trim", elected: closed, synced: false, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			quiet := 10 * time.Millisecond
			busy := tt.busy
			if tt.neverIdle {
				busy = 1 << 30
			}
			r := &Runnable{Cache: syncedCache{tt.synced}, Elected: tt.elected, Quiet: quiet,
				FollowerWait: 50 * time.Millisecond, Log: rec.log(), trim: rec.trim, cpu: busyFor(busy, quiet)}
			if r.NeedLeaderElection() {
				t.Fatal("NeedLeaderElection: a follower's pages are worth trimming too")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- r.Start(ctx) }()
			if tt.electLate {
				for rec.count() < 1 && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
				close(tt.elected)
			}
			if (!tt.electLate && tt.elected != closed) || tt.neverIdle {
				// Never elected, or never idle: Start waits until ctx ends.
				time.Sleep(time.Second)
				cancel()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := rec.count(); got != tt.want {
				t.Fatalf("%d trims, want %d", got, tt.want)
			}
			if tt.want > 0 {
				if d, earliest := rec.calls[0].Sub(start), time.Duration(tt.busy+1)*quiet; d < earliest {
					t.Errorf("first trim %s after start, before %d busy windows and a quiet one (%s)", d, tt.busy, earliest)
				}
				if len(rec.lines) != tt.want {
					t.Errorf("log lines %q, want %d", rec.lines, tt.want)
				}
			}
		})
	}
}

func TestRunnableLogsErrors(t *testing.T) {
	if !Supported {
		t.Skip("memtrim trims on Linux only")
	}
	closed := make(chan struct{})
	close(closed)
	var errLines []string
	log := funcr.New(func(_, args string) { errLines = append(errLines, args) }, funcr.Options{})
	r := &Runnable{Elected: closed, Quiet: time.Millisecond, Log: log, cpu: busyFor(0, time.Millisecond),
		trim: func() (Result, error) { return Result{}, errors.New("madvise: invalid argument") }}
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("Start returned %v: a trim that fails must not stop the manager", err)
	}
	if len(errLines) != 1 {
		t.Fatalf("log lines %q, want the one error", errLines)
	}
}
