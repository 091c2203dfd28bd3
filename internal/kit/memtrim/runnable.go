package memtrim

import (
	"context"
	"time"

	"github.com/go-logr/logr"
)

// Defaults of Runnable.
const (
	// DefaultSettle is how long after the manager is elected (its controllers start then) Runnable waits
	// before it trims: enough for the controllers' informers to list and their workers to start.
	DefaultSettle = 5 * time.Second
	// DefaultFollowerWait is how long a replica that is not elected waits before it trims what its own
	// start used; it trims again once elected.
	DefaultFollowerWait = 30 * time.Second
)

// Runnable is a manager runnable (controller-runtime's manager.Runnable) that trims once the manager is
// idle after its start: Settle after it is elected, and once its cache has synced. A replica not elected
// within FollowerWait trims then, and again once elected, since the controllers' start touches pages of
// its own. It runs on every replica (NeedLeaderElection is false), never fails the manager (errors are
// logged), and does nothing more after that.
type Runnable struct {
	// Cache is the manager's cache (mgr.GetCache()), waited on before each trim.
	Cache interface {
		WaitForCacheSync(ctx context.Context) bool
	}
	// Elected is mgr.Elected().
	Elected <-chan struct{}
	// Settle and FollowerWait default to DefaultSettle and DefaultFollowerWait.
	Settle, FollowerWait time.Duration
	// Log gets one line per trim.
	Log logr.Logger

	// trim is Trim, or a test's.
	trim func() (Result, error)
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
	settle := r.Settle
	if settle == 0 {
		settle = DefaultSettle
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(settle):
	}
	if r.Cache != nil && !r.Cache.WaitForCacheSync(ctx) {
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
	r.Log.Info("trimmed the start's pages of the binary", "bytes", res.Trimmed(), "elected", elected,
		"mappedBytes", res.Bytes, "skippedMappings", res.Skipped, "rssBefore", res.Before.RSS, "rssAfter", res.After.RSS,
		"rssFileAfter", res.After.RSSFile)
}
