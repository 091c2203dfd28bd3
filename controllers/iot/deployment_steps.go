package iot

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/fleet"
)

// natsRetry is how soon a Deployment is tried again after NATS failed a request.
const natsRetry = 5 * time.Second

// reconcileDesiredState selects the devices, withdraws the Deployment from devices it no longer
// selects, and gives the current generation to as many selected devices as the rollout allows now.
func (r *DeploymentReconciler) reconcileDesiredState(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.store
	if st == nil && r.NATS == nil {
		s.natsMissing = true
		return ctrl.Result{}, nil
	}
	if st == nil {
		s.natsError = "connecting to " + r.NATS.URL
		return ctrl.Result{RequeueAfter: natsRetry}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&s.d.Spec.TargetSelector)
	if err != nil {
		s.invalidSelector = err.Error()
		s.Warn(iotv1.ReasonInvalidSelector, err.Error())
		return ctrl.Result{}, nil
	}

	// One pass over the registry and the heartbeats: the selected devices, and which of them are alive.
	// What this holds lives only for this reconcile; the operator keeps no device between reconciles.
	var matched []string
	if err := st.EachDevice(ctx, func(d *fleet.DeviceInfo) {
		if sel.Matches(labels.Set(d.Labels)) {
			matched = append(matched, d.ID)
		}
	}); err != nil {
		return s.natsFailed(err)
	}
	slices.Sort(matched)
	alive := map[string]bool{}
	if err := st.Alive(ctx, func(id string) { alive[id] = true }); err != nil {
		return s.natsFailed(err)
	}
	desiredGen := map[string]int64{}
	if err := st.EachDesired(ctx, s.key, func(device string, d *fleet.Desired) { desiredGen[device] = d.Generation }); err != nil {
		return s.natsFailed(err)
	}

	// Withdraw from devices no longer selected (or no longer registered).
	withdrawn := 0
	for device := range desiredGen {
		if _, ok := slices.BinarySearch(matched, device); ok {
			continue
		}
		if err := st.Withdraw(ctx, device, s.key); err != nil {
			return s.natsFailed(err)
		}
		delete(desiredGen, device)
		withdrawn++
	}
	if withdrawn > 0 {
		s.Recorder.Eventf(s.d, "Normal", iotv1.EventWithdrawn, "withdrew the deployment from %d devices the selector no longer selects", withdrawn)
	}

	gen := s.d.Generation
	s.snapshot = r.counters.Snapshot(s.key)
	cur := s.snapshot.ByGeneration[gen]
	s.progress = fleet.Progress{Matched: len(matched), Succeeded: int(cur.Running), Failed: int(cur.Failed)}
	for _, device := range matched {
		if desiredGen[device] == gen {
			s.progress.Published++
		}
		if _, published := desiredGen[device]; published && !alive[device] {
			s.stale++
		}
	}
	if s.d.Spec.Paused {
		return ctrl.Result{}, nil
	}

	target, hold := fleet.Target(s.d.Spec.Rollout, s.progress)
	s.hold = hold
	desired := fleet.Desired{Generation: gen, Score: s.d.Spec.Score}
	published := 0
	for _, device := range matched {
		if s.progress.Published >= target {
			break
		}
		if desiredGen[device] == gen {
			continue
		}
		if _, err := st.Publish(ctx, device, s.key, desired); err != nil {
			return s.natsFailed(err)
		}
		s.progress.Published++
		published++
	}
	if published > 0 {
		s.Recorder.Eventf(s.d, "Normal", iotv1.EventPublished, "published generation %d to %d devices (%d of %d selected)",
			gen, published, s.progress.Published, s.progress.Matched)
	}
	if len(matched) > 0 {
		// Heartbeats expire without an event the counters see: look again when one could have.
		s.requeue = ctrl.Result{RequeueAfter: st.HeartbeatTTL}
	}
	return ctrl.Result{}, nil
}

// natsFailed records a NATS failure: Progressing says so, and the error requeues the Deployment.
func (s *scope) natsFailed(err error) (ctrl.Result, error) {
	s.natsError = err.Error()
	return ctrl.Result{RequeueAfter: natsRetry}, fmt.Errorf("nats: %w", err)
}
