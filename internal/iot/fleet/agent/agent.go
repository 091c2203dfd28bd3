// Package agent is the on-device fleet agent: it registers its device, sends heartbeats, watches the
// device's desired state in NATS JetStream, reconciles the container runtime to it, repairs drift, and
// reports each state transition with compare-and-swap (internal/iot/fleet/store). cmd/fleet-agent runs it
// with podman; tests and the demo run it with a fake runtime.
package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/util/wait"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// Version is the agent's version, reported in the device's inventory.
const Version = "0.1.0"

// Runtime runs a deployment's containers on the device. Both methods are idempotent: the agent calls
// them again after its own restarts and after a NATS outage.
type Runtime interface {
	// Apply makes the deployment's containers match score (pulling images only when absent) and
	// returns once they run, or why they cannot.
	Apply(ctx context.Context, d fleet.DeploymentKey, score iotv1.Score) error
	// Remove stops and removes the deployment's containers; "already gone" is success.
	Remove(ctx context.Context, d fleet.DeploymentKey) error
}

// Agent is one device's agent.
type Agent struct {
	// Device is the device's record: its ID, labels and inventory.
	Device fleet.DeviceInfo
	// Store reads and writes the fleet's buckets.
	Store *store.Store
	// Runtime runs the containers.
	Runtime Runtime
	// Log receives what the agent does.
	Log logr.Logger
	// RetryAfter is how long a failed NATS request waits before it is tried again; one second when zero.
	RetryAfter time.Duration
	// ReconcileInterval is how often the agent compares what runs with what is desired and repairs the
	// difference (a Runtime that is an Observer only); DefaultReconcileInterval when zero. A Runtime that
	// is a Watcher also triggers a comparison on each change it streams.
	ReconcileInterval time.Duration

	// mu serialises what the agent does to the runtime, and guards desired.
	mu      sync.Mutex
	desired map[fleet.DeploymentKey]*drift
	events  ring
	refused atomic.Uint64
}

// Run registers the device and reconciles until ctx ends. It returns an error only when the device
// cannot be registered at all (an invalid ID).
func (a *Agent) Run(ctx context.Context) error {
	if err := fleet.ValidDeviceID(a.Device.ID); err != nil {
		return err
	}
	a.Device.Inventory.AgentVersion = Version
	a.mu.Lock()
	a.desired = map[fleet.DeploymentKey]*drift{}
	a.mu.Unlock()
	// Tried at once, then every RetryAfter, until registered or ctx ends.
	if err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: a.retryAfter(), Steps: math.MaxInt}, func(ctx context.Context) (bool, error) {
		if err := a.Store.RegisterDevice(ctx, a.Device); err != nil {
			a.Log.Error(err, "register device")
			return false, nil
		}
		return true, nil
	}); err != nil {
		return nil // ctx ended
	}
	var workers sync.WaitGroup
	defer workers.Wait()
	workers.Add(2)
	go func() {
		defer workers.Done()
		a.heartbeats(ctx)
	}()
	go func() {
		defer workers.Done()
		a.repairDrift(ctx)
	}()
	if nc := a.Store.Conn(); nc != nil {
		sub, err := a.serveLogs(ctx, nc)
		if err != nil {
			a.Log.Error(err, "serve log requests")
		} else if sub != nil {
			defer func() { _ = sub.Unsubscribe() }()
		}
		esub, err := a.serveEvents(nc)
		if err != nil {
			a.Log.Error(err, "serve event requests")
		} else {
			defer func() { _ = esub.Unsubscribe() }()
		}
	}
	// Not wait.Until: a watch that ends for a reconnection starts again at once (every desired state comes
	// again); only one that failed waits before the next.
	for ctx.Err() == nil {
		if err := a.watch(ctx); err != nil && ctx.Err() == nil {
			a.Log.Error(err, "watch desired state")
			a.wait(ctx)
		}
	}
	return nil
}

func (a *Agent) wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(a.retryAfter()):
		return true
	}
}

// retryAfter is how long the agent waits before it tries a failed request again: RetryAfter, a second
// when zero.
func (a *Agent) retryAfter() time.Duration {
	if a.RetryAfter <= 0 {
		return time.Second
	}
	return a.RetryAfter
}

func (a *Agent) heartbeats(ctx context.Context) {
	var rev uint64 // the revision of this agent's last heartbeat: the next one replaces it
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		next, err := a.Store.Heartbeat(ctx, a.Device.ID, rev)
		if err != nil && ctx.Err() == nil {
			a.Log.Error(err, "heartbeat")
		}
		if err == nil {
			a.events.heartbeat(time.Now().UTC())
		}
		rev = next
	}, a.Store.HeartbeatTTL/3)
}

// watch follows the device's desired state: on a (re)start it sees every current desired state, then
// each change, and handles them one at a time.
func (a *Agent) watch(ctx context.Context) error {
	w, err := a.Store.WatchDesired(ctx, a.Device.ID)
	if err != nil {
		return err
	}
	defer w.Stop()
	reconnected := a.Store.Reconnected()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-reconnected:
			// Watch again: every current desired state comes again and is applied idempotently.
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("desired-state watch closed")
			}
			if e == nil {
				continue
			}
			// Until it is handled or the agent stops; the error is always nil.
			_ = wait.PollUntilContextCancel(ctx, a.retryAfter(), true, func(ctx context.Context) (bool, error) {
				err := a.handle(ctx, e)
				if err != nil {
					a.Log.Error(err, "reconcile desired state", "key", e.Key())
				}
				return err == nil, nil
			})
		}
	}
}

// handle reconciles one desired-state change. An error is a NATS failure worth retrying; a runtime
// failure is reported as the Failed phase instead.
func (a *Agent) handle(ctx context.Context, e jetstream.KeyValueEntry) error {
	_, d, err := fleet.ParseDesiredKey(e.Key())
	if err != nil {
		a.Log.Info("ignoring a desired-state key outside the contract", "key", e.Key())
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		// Withdrawn: the operator marks the state Removed itself.
		delete(a.desired, d)
		if err := a.Runtime.Remove(ctx, d); err != nil {
			a.Log.Error(err, "remove containers", "deployment", d)
			a.record(d, SeverityError, ReasonRemoveFailed, err.Error())
		} else {
			a.record(d, SeverityInfo, ReasonRemoved, "the deployment was withdrawn from this device")
		}
		return nil
	}
	des, err := fleet.DecodeDesired(e.Value())
	if err != nil {
		a.Log.Error(err, "unreadable desired state", "key", e.Key())
		return nil
	}
	cur, err := a.Store.StateOf(ctx, d, a.Device.ID)
	if err != nil {
		return err
	}
	t := &drift{gen: des.Generation, score: des.Score}
	if cur != nil && cur.Generation == des.Generation {
		t.phase, t.msg = cur.Phase, cur.Message
	}
	// After a restart the record may already be Running or Failed for this generation: do not go back
	// through Pending, only apply again (idempotent) and report if the outcome changed.
	if cur == nil || cur.Generation != des.Generation || cur.Phase == fleet.PhaseRemoved {
		if err := a.report(ctx, d, t, fleet.PhasePending, ""); err != nil {
			return err
		}
	}
	a.desired[d] = t
	if err := a.Runtime.Apply(ctx, d, des.Score); err != nil {
		msg := truncate(err.Error(), 512)
		a.record(d, SeverityError, ReasonApplyFailed, msg)
		if err := a.report(ctx, d, t, fleet.PhaseFailed, msg); err != nil {
			return fmt.Errorf("report %s: %w", fleet.PhaseFailed, err)
		}
		return nil
	}
	obs, ok := a.Runtime.(Observer)
	if !ok {
		a.record(d, SeverityInfo, ReasonApplied, fmt.Sprintf("generation %d runs", des.Generation))
		if err := a.report(ctx, d, t, fleet.PhaseRunning, ""); err != nil {
			return fmt.Errorf("report %s: %w", fleet.PhaseRunning, err)
		}
		return nil
	}
	// What runs decides the phase: a container whose restart policy keeps it stopped is not Running.
	seen, err := obs.Observe(ctx, d, des.Score)
	if err != nil {
		seen = nil
	}
	if v := t.look(seen, time.Now()); v.report && v.phase != fleet.PhaseRunning {
		return a.apply(ctx, d, t, v)
	}
	a.record(d, SeverityInfo, ReasonApplied, fmt.Sprintf("generation %d runs", des.Generation))
	return a.report(ctx, d, t, fleet.PhaseRunning, "")
}

// report writes a transition of d's state with the store's compare-and-swap Report, and remembers it.
func (a *Agent) report(ctx context.Context, d fleet.DeploymentKey, t *drift, p fleet.Phase, msg string) error {
	if _, err := a.Store.Report(ctx, d, a.Device.ID, t.gen, p, msg); err != nil {
		return err
	}
	t.phase, t.msg = p, msg
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
