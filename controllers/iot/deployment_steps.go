package iot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// natsRetry is how soon a Deployment is tried again after NATS failed a request.
const natsRetry = 5 * time.Second

// reconcileDesiredState selects the devices, withdraws the Deployment from devices it no longer
// selects, and gives the current generation to as many selected devices as the rollout allows now.
func (r *DeploymentReconciler) reconcileDesiredState(ctx context.Context, s *deploymentScope) (ctrl.Result, error) {
	st := s.store
	if st == nil && r.NATS == nil {
		s.natsMissing = true
		return ctrl.Result{}, nil
	}
	if st == nil {
		s.natsError = "connecting to " + r.NATS.Redacted()
		return ctrl.Result{RequeueAfter: natsRetry}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&s.d.Spec.TargetSelector)
	if err != nil {
		s.invalidSelector = err.Error()
		// Progressing says it (setProgressing); the Warning goes out once per selector error, not on
		// every wake-up the fleet's changes cause.
		if !reconcile.Said(s.Before, iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonInvalidSelector, s.invalidSelectorMessage()) {
			s.Warn(iotv1.ReasonInvalidSelector, err.Error())
		}
		return ctrl.Result{}, nil
	}

	counts, ok := r.index.Select(s.key, sel.String(), sel)
	if !ok {
		// The index is counting the devices of a new selector; its end wakes every Deployment.
		s.counting = true
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	gen := s.d.Generation
	s.snapshot = r.counters.Snapshot(s.key)
	cur := s.snapshot.ByGeneration[gen]
	s.progress = fleet.Progress{Matched: int(counts.Matched), Succeeded: int(cur.Running), Failed: int(cur.Failed)}
	s.stale, s.beats = int(counts.Stale), counts

	if r.rollbackDue(s) {
		if res, pause, err := r.reconcileRollback(ctx, s, st, sel, counts.Epoch); !pause {
			return res, err
		}
	}

	// The status comes from the counters and the index alone. The devices are read only when the
	// selection, the generation or the rollout's next step calls for it.
	p, full := r.plans.get(s.key), false
	switch {
	case !p.current(gen, counts.Epoch, sel.String(), r.clock()):
		full = true
	default:
		s.progress.Published = p.published
		if !s.d.Spec.Paused {
			target, hold := fleet.Target(s.d.Spec.Rollout, s.progress)
			s.hold, full = hold, target > p.published
		}
	}
	if !full {
		return ctrl.Result{}, nil
	}
	published, err := r.publish(ctx, s, st, sel)
	if errors.Is(err, errRolledBackDevices) {
		// Desired states name this generation as rolled back, and the status does not say so yet (the
		// operator stopped between its rollback's first batch and its status write): go on with it.
		s.rollback = &rollback{failed: gen, reason: string(fleet.HoldFailures), started: true}
		res, _, err := r.reconcileRollback(ctx, s, st, sel, counts.Epoch) // begun: it never pauses
		return res, err
	}
	if err != nil {
		return s.natsFailed(err)
	}
	r.plans.set(s.key, &plan{generation: gen, epoch: counts.Epoch, selector: sel.String(), published: published, at: r.clock()})
	return ctrl.Result{}, nil
}

// publish is the reconcile's pass over the devices: it withdraws the Deployment from devices no longer
// selected, and gives the current generation to as many selected devices as the rollout allows now. It
// returns how many selected devices have the current generation. What it reads lives only for this pass.
func (r *DeploymentReconciler) publish(ctx context.Context, s *deploymentScope, st *store.Store, sel labels.Selector) (int, error) {
	matched, current, err := r.selectDevices(ctx, s, st, sel)
	if err != nil {
		return 0, err
	}
	gen := s.d.Generation
	desiredGen := make(map[string]int64, len(current))
	rolledBack := false
	for device, d := range current {
		desiredGen[device] = d.Generation
		rolledBack = rolledBack || d.RollbackOf == gen
	}
	s.progress.Published = 0
	for _, device := range matched {
		if desiredGen[device] == gen {
			s.progress.Published++
		}
	}
	if s.d.Spec.Paused {
		return s.progress.Published, nil
	}
	if rolledBack {
		return 0, errRolledBackDevices
	}
	// The rollout's step from the devices just read (the index may lag them by a change, which wakes
	// this Deployment again).
	now := s.progress
	now.Matched = len(matched)
	target, hold := fleet.Target(s.d.Spec.Rollout, now)
	s.hold = hold
	var give []string
	for _, device := range matched {
		if s.progress.Published+len(give) >= target {
			break
		}
		if desiredGen[device] != gen {
			give = append(give, device)
		}
	}
	if err := giveDesired(ctx, st, s.key, give, fleet.Desired{Generation: gen, Score: s.d.Spec.Score}); err != nil {
		return 0, err
	}
	published := len(give)
	s.progress.Published += published
	if published > 0 {
		s.Normalf(iotv1.EventPublished, "published generation %d to %d devices (%d of %d selected)",
			gen, published, s.progress.Published, len(matched))
	}
	return s.progress.Published, nil
}

// give_ writes desired as the desired state of each of devices for deployment key, a few requests in
// flight at once: one at a time, a fleet of 100,000 waits for 100,000 round trips.
func giveDesired(ctx context.Context, st *store.Store, key fleet.DeploymentKey, devices []string, desired fleet.Desired) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(publishConcurrency)
	for _, device := range devices {
		g.Go(func() error {
			_, err := st.Publish(gctx, device, key, desired)
			return err
		})
	}
	return g.Wait()
}

// errRolledBackDevices is publish finding desired states that roll the current generation back.
var errRolledBackDevices = errors.New("desired states roll the current generation back")

// selectDevices reads the devices sel selects (sorted) and the Deployment's desired states, and withdraws
// it from the devices no longer selected (or no longer registered); desired is then the selected
// devices' desired states.
func (r *DeploymentReconciler) selectDevices(ctx context.Context, s *deploymentScope, st *store.Store, sel labels.Selector) ([]string, map[string]*fleet.Desired, error) {
	var matched []string
	trusted := r.Policy.Fleet.TrustedKeys(s.key.Namespace)
	if err := st.EachDevice(ctx, func(d *fleet.DeviceInfo) {
		if sel.Matches(labels.Set(d.Selection().View(trusted))) {
			matched = append(matched, d.ID)
		}
	}); err != nil {
		return nil, nil, err
	}
	slices.Sort(matched)
	desired := map[string]*fleet.Desired{}
	if err := st.EachDesired(ctx, s.key, func(device string, d *fleet.Desired) { desired[device] = d }); err != nil {
		return nil, nil, err
	}

	withdrawn := 0
	for device := range desired {
		if _, ok := slices.BinarySearch(matched, device); ok {
			continue
		}
		if err := st.Withdraw(ctx, device, s.key); err != nil {
			return nil, nil, err
		}
		delete(desired, device)
		withdrawn++
	}
	if withdrawn > 0 {
		s.Normalf(iotv1.EventWithdrawn, "withdrew the deployment from %d devices the selector no longer selects", withdrawn)
	}
	return matched, desired, nil
}

// publishConcurrency is how many desired states a pass writes at once.
const publishConcurrency = 32

// planMaxAge is how long a Deployment goes without a pass over its devices while nothing calls for one:
// a pass corrects desired state changed behind the operator's back.
const planMaxAge = 10 * time.Minute

// plan is what the last pass over a Deployment's devices found: enough to write its status, and to know
// when the next pass is due, without reading the devices. One per Deployment, never one per device.
type plan struct {
	generation int64
	epoch      uint64
	selector   string
	published  int
	at         time.Time
	// rolledBack is a rollback of generation found complete: nothing more to publish for it.
	rolledBack *rollback
}

// current says whether p (nil: none) still describes the Deployment's devices: same generation,
// device set and selector, and not older than planMaxAge at now.
func (p *plan) current(gen int64, epoch uint64, selector string, now time.Time) bool {
	return p != nil && p.generation == gen && p.epoch == epoch && p.selector == selector && now.Sub(p.at) <= planMaxAge
}

// plans are the Deployments' last passes.
type plans struct {
	mu sync.Mutex
	m  map[fleet.DeploymentKey]*plan
}

func (p *plans) get(k fleet.DeploymentKey) *plan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[k]
}

func (p *plans) set(k fleet.DeploymentKey, v *plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[fleet.DeploymentKey]*plan{}
	}
	p.m[k] = v
}

func (p *plans) forget(k fleet.DeploymentKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, k)
}

// natsFailed records a NATS failure: Progressing says so, and the error requeues the Deployment.
func (s *deploymentScope) natsFailed(err error) (ctrl.Result, error) {
	s.natsError = err.Error()
	return ctrl.Result{RequeueAfter: natsRetry}, fmt.Errorf("nats: %w", err)
}
