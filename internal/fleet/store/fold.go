package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/fleet"
)

// Fold keeps c equal to the state bucket until ctx ends: a first pass over every record, then every
// change, and a recount from scratch whenever the counters cannot fold a change (a gap in revisions, an
// impossible transition, a record deleted without being withdrawn) or the watch breaks (the NATS
// server restarted). synced is called after each (re)count, when the counts are the bucket's.
func (s *Store) Fold(ctx context.Context, c *fleet.Counters, synced func()) error {
	return refold(ctx, func() error { return s.foldOnce(ctx, c, synced) })
}

// refold runs pass, each pass a count from scratch followed by the changes it folds, until ctx ends.
func refold(ctx context.Context, pass func() error) error {
	for {
		err := pass()
		if ctx.Err() != nil {
			return nil
		}
		// Back off a little: the server may be restarting.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(recountBackoff(err)):
		}
	}
}

func recountBackoff(err error) time.Duration {
	if errors.Is(err, fleet.ErrGap) || errors.Is(err, fleet.ErrImpossible) || errors.Is(err, fleet.ErrUnknownRemoval) {
		return 0
	}
	return time.Second
}

func (s *Store) foldOnce(ctx context.Context, c *fleet.Counters, synced func()) error {
	c.Reset()
	w, err := s.State.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", fleet.BucketState, err)
	}
	defer stopWatch(w)
	reconnected := s.Reconnected()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-reconnected:
			return fmt.Errorf("%w: reconnected to NATS", fleet.ErrGap) // recount at once
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("state watch closed")
			}
			if e == nil {
				c.Synced()
				if synced != nil {
					synced()
				}
				continue
			}
			ch := fleet.Change{Revision: e.Revision(), Key: e.Key(), Value: e.Value(),
				Deleted: e.Operation() != jetstream.KeyValuePut}
			if err := c.Observe(ch); err != nil {
				return err
			}
		}
	}
}

// stopWatch stops a KV watch and drains what it had yet to deliver: the client's delivery blocks on a
// full Updates channel, and a watch stopped in the middle of its initial values would otherwise keep
// every message it had received, and its goroutine, for good. The channel closes once the
// subscription is gone.
func stopWatch(w jetstream.KeyWatcher) {
	_ = w.Stop()
	go func() {
		for range w.Updates() { //nolint:revive // draining
		}
	}()
}
