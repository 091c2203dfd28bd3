package memtrim

import (
	"context"
	"time"

	"github.com/go-logr/logr"
)

// TrimmedMessage is the message of the log line a trim writes (the bench waits for it).
const TrimmedMessage = "trimmed the start's pages of the binary"

// Defaults of Runnable.
const (
	// DefaultQuiet is the window over which Runnable measures the process's CPU use before it trims.
	DefaultQuiet = 5 * time.Second
	// DefaultIdleCPU is the share of one core under which the process counts as idle over a window: a
	// manager at rest renews its lease and resyncs, a manager converging objects uses most of a core.
	DefaultIdleCPU = 0.05
	// DefaultFollowerWait is how long a replica that is not elected waits before it trims what its own
	// start used; it trims again once elected.
	DefaultFollowerWait = 30 * time.Second
)

// Runnable is a manager runnable (controller-runtime's manager.Runnable) that trims once the manager is
// idle after its start: elected, its cache synced, and then a whole Quiet window in which the process
// used less than IdleCPU of a core. Trimming while the controllers are busy (the first convergence of
// many objects) would only make them read the same pages back at once. A replica not elected within
// FollowerWait trims when idle, and again once elected, since the controllers' start touches pages of
// its own. It runs on every replica (NeedLeaderElection is false), never fails the manager (errors are
// logged), and does nothing more after that.
type Runnable struct {
	// Cache is the manager's cache (mgr.GetCache()), waited on before each trim.
	Cache interface {
		WaitForCacheSync(ctx context.Context) bool
	}
	// Elected is mgr.Elected().
	Elected <-chan struct{}
	// Quiet, IdleCPU and FollowerWait default to DefaultQuiet, DefaultIdleCPU and DefaultFollowerWait.
	Quiet        time.Duration
	IdleCPU      float64
	FollowerWait time.Duration
	// Log gets one line per trim.
	Log logr.Logger

	// trim is Trim and cpu the process's CPU time so far, or a test's.
	trim func() (Result, error)
	cpu  func() (time.Duration, error)
}

// NeedLeaderElection is false: every replica's resident set is worth trimming.
func (r *Runnable) NeedLeaderElection() bool { return false }

// Start trims as Runnable says and returns; it returns early when ctx ends.
func (r *Runnable) Start(ctx context.Context) error {
	if !Supported {
		return nil
	}
	follower := r.FollowerWait
	if follower == 0 {
		follower = DefaultFollowerWait
	}
	timer := time.NewTimer(follower)
	defer timer.Stop()
	elected := false
	select {
	case <-ctx.Done():
		return nil
	case <-r.Elected:
		elected = true
	case <-timer.C:
	}
	r.trimWhenIdle(ctx, elected)
	if elected {
		return nil
	}
	select {
	case <-ctx.Done():
	case <-r.Elected:
		r.trimWhenIdle(ctx, true)
	}
	return nil
}

func (r *Runnable) trimWhenIdle(ctx context.Context, elected bool) {
	if r.Cache != nil && !r.Cache.WaitForCacheSync(ctx) {
		return
	}
	busy, err := r.waitIdle(ctx)
	if err != nil {
		r.Log.Error(err, "could not measure the process's CPU use; not trimming")
		return
	}
	if ctx.Err() != nil {
		return
	}
	trim := r.trim
	if trim == nil {
		trim = Trim
	}
	res, err := trim()
	if err != nil {
		// An old kernel (EINVAL) or a /proc that cannot be read: the operator runs as before.
		r.Log.Error(err, "could not trim the start's pages of the binary", "elected", elected)
		return
	}
	r.Log.Info(TrimmedMessage, "bytes", res.Trimmed(), "elected", elected,
		"mappedBytes", res.Bytes, "skippedMappings", res.Skipped, "rssBefore", res.Before.RSS, "rssAfter", res.After.RSS,
		"rssFileAfter", res.After.RSSFile, "busyWindows", busy)
}

// waitIdle returns once a whole Quiet window went by with the process under IdleCPU of a core, or ctx
// ended; busy counts the windows before it that were not.
func (r *Runnable) waitIdle(ctx context.Context) (busy int, err error) {
	quiet, share := r.Quiet, r.IdleCPU
	if quiet == 0 {
		quiet = DefaultQuiet
	}
	if share == 0 {
		share = DefaultIdleCPU
	}
	cpu := r.cpu
	if cpu == nil {
		cpu = processCPU
	}
	limit := time.Duration(float64(quiet) * share)
	for {
		before, err := cpu()
		if err != nil {
			return busy, err
		}
		select {
		case <-ctx.Done():
			return busy, nil
		case <-time.After(quiet):
		}
		after, err := cpu()
		if err != nil {
			return busy, err
		}
		if after-before < limit {
			return busy, nil
		}
		busy++
	}
}
