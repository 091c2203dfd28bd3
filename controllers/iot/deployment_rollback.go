package iot

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// revisionApp is the app label of the ControllerRevisions that keep a Deployment's successful scores.
const revisionApp = "iot-deployment-score"

// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;create;delete

// rollback is where the rollback of the current, failed generation stands.
type rollback struct {
	// to is the previous successful generation the devices are given back; failed is the current one.
	to, failed int64
	// reason is why the failed generation is rolled back (a fleet.Hold: TooManyFailures or
	// ProgressDeadlineExceeded).
	reason string
	// started says the rollback began in an earlier reconcile (status.rolledBackTo, or desired states that
	// name it).
	started bool
	// remaining, given, answered and running count the selected devices that received the failed
	// generation: still desired on it, given the previous score back, of those reporting the previous
	// generation (running or failed), and of those running it.
	remaining, given, answered, running int
	// done is a rollback through: nothing remaining, every device given back answered.
	done bool
}

// rollbackDue says whether this reconcile rolls the current generation back (s.rollback set): a rollback
// of it began before, or the rollout just failed and rollout.onFailure is Rollback. A paused Deployment
// publishes nothing, a rollback neither.
func (r *DeploymentReconciler) rollbackDue(s *deploymentScope) bool {
	gen := s.d.Generation
	if s.d.Spec.Paused {
		return false
	}
	if rb := s.d.Status.RolledBackTo; rb != nil && rb.FailedGeneration == gen {
		s.rollback = &rollback{to: rb.Generation, failed: gen, reason: rb.Reason, started: true}
		return true
	}
	if s.d.Spec.Rollout.OnFailure != iotv1.RolloutFailureRollback {
		return false
	}
	// The deadline counts from the last progress of this generation only.
	deadline := s.status.ObservedGeneration == gen && s.deadlineExceeded(r.clock())
	hold := fleet.Failing(s.d.Spec.Rollout, s.progress, deadline)
	if hold == fleet.HoldNone {
		return false
	}
	s.rollback = &rollback{failed: gen, reason: string(hold)}
	return true
}

// reconcileRollback gives the selected devices that received the failed generation the previous
// successful score again, batch by batch (fleet.RollbackBatch), and never the failed generation. With
// no previous successful score to return to, it says RollbackUnavailable: a rollback that had not begun
// leaves the rollout to onFailure Pause's behaviour (pause: the caller's ordinary step goes on), one that
// had begun publishes nothing more.
func (r *DeploymentReconciler) reconcileRollback(ctx context.Context, s *deploymentScope, st *store.Store, sel labels.Selector, epoch uint64) (res ctrl.Result, pause bool, err error) {
	rb, gen := s.rollback, s.d.Generation
	if p := r.plans.get(s.key); p.current(gen, epoch, sel.String(), r.clock()) && p.rolledBack != nil && p.rolledBack.to == rb.to {
		done := *p.rolledBack
		s.rollback = &done
		s.progress.Published = 0
		// The reconcile that found it done said so; this one may read a cached status older than that
		// reconcile's write, which would say it again.
		r.recordRollback(s, false)
		return ctrl.Result{}, false, nil
	}

	revs, err := r.revisions(ctx, s.d)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if !rb.started && slices.ContainsFunc(revs, func(rev appsv1.ControllerRevision) bool { return rev.Revision == gen }) {
		// This generation completed its rollout once: a device that joined since and fails it is not the
		// rollout failing. onFailure Pause's behaviour, without a word about rollbacks.
		s.rollback = nil
		return ctrl.Result{}, true, nil
	}
	to, score, why := r.previousScore(s.d, revs, rb.to)
	if why != "" {
		s.rollback, s.rollbackUnavailable = nil, why
		if !rb.started {
			return ctrl.Result{}, true, nil
		}
		// The devices given the previous score back keep it; the failed generation is not published.
		_, desired, err := r.selectDevices(ctx, s, st, sel)
		if err != nil {
			res, err = s.natsFailed(err)
			return res, false, err
		}
		s.progress.Published = 0
		for _, d := range desired {
			if d.Generation == gen {
				s.progress.Published++
			}
		}
		return ctrl.Result{}, false, nil
	}
	res, err = r.rollBack(ctx, s, st, sel, epoch, to, score)
	return res, false, err
}

// rollBack is reconcileRollback's pass over the devices, with the generation to return to and its score.
func (r *DeploymentReconciler) rollBack(ctx context.Context, s *deploymentScope, st *store.Store, sel labels.Selector, epoch uint64, to int64, score iotv1.Score) (ctrl.Result, error) {
	rb, gen := s.rollback, s.d.Generation
	rb.to = to

	matched, desired, err := r.selectDevices(ctx, s, st, sel)
	if err != nil {
		return s.natsFailed(err)
	}
	states := map[string]*fleet.State{}
	if err := st.EachState(ctx, s.key, func(device string, state *fleet.State) { states[device] = state }); err != nil {
		return s.natsFailed(err)
	}
	var remaining []string
	rb.given, rb.answered, rb.running = 0, 0, 0
	for _, device := range matched {
		d := desired[device]
		switch {
		case d == nil:
		case d.Generation == gen:
			remaining = append(remaining, device)
		case d.RollbackOf == gen:
			rb.given++
			if state := states[device]; state != nil && state.Generation == d.Generation {
				switch state.Phase {
				case fleet.PhaseRunning:
					rb.running++
					rb.answered++
				case fleet.PhaseFailed:
					rb.answered++
				}
			}
		}
	}
	n := fleet.RollbackBatch(s.d.Spec.Rollout, len(matched),
		fleet.RollbackProgress{Remaining: len(remaining), Given: rb.given, Answered: rb.answered})
	if !rb.started && rb.given == 0 {
		rollbacks.WithLabelValues(rb.reason).Inc()
		s.Warn(iotv1.ReasonRollingBack, fmt.Sprintf("generation %d failed (%s): giving the %d selected devices that received it generation %d again; generation %d is not published again until the spec changes",
			gen, rb.reason, len(remaining)+rb.given, to, gen))
	}
	rb.started = true
	if n > 0 {
		if err := giveDesired(ctx, st, s.key, remaining[:n], fleet.Desired{Generation: to, Score: score, RollbackOf: gen}); err != nil {
			return s.natsFailed(err)
		}
		rb.given += n
		s.Normalf(iotv1.ReasonRollingBack, "gave generation %d back to %d devices (%d of %d that received generation %d)",
			to, n, rb.given, len(remaining)+rb.given-n, gen)
	}
	rb.remaining = len(remaining) - n
	rb.done = rb.remaining == 0 && rb.answered == rb.given
	s.progress.Published = rb.remaining
	r.recordRollback(s, true)
	p := &plan{generation: gen, epoch: epoch, selector: sel.String(), published: rb.remaining, at: r.clock()}
	if rb.done {
		done := *rb
		p.rolledBack = &done
	}
	r.plans.set(s.key, p)
	return ctrl.Result{}, nil
}

// recordRollback writes the rollback into the status being computed (kept where the operator reads it
// after a restart), and, when announce, says once that it is through.
func (r *DeploymentReconciler) recordRollback(s *deploymentScope, announce bool) {
	rb := s.rollback
	if cur := s.status.RolledBackTo; cur == nil || cur.FailedGeneration != rb.failed || cur.Generation != rb.to {
		s.status.RolledBackTo = &iotv1.RollbackStatus{Generation: rb.to, FailedGeneration: rb.failed, Reason: rb.reason,
			StartTime: metav1.NewTime(r.clock().Truncate(1e9))}
	}
	if announce && rb.done && reconcile.Changed(s.Before, iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonRolledBack) {
		s.Normal(iotv1.ReasonRolledBack, rolledBackMessage(rb))
	}
}

func rollingBackMessage(rb *rollback) string {
	return fmt.Sprintf("generation %d failed (%s): rolling back to generation %d; %d of %d devices that received generation %d were given generation %d again, %d of them report it (%d running)",
		rb.failed, rb.reason, rb.to, rb.given, rb.given+rb.remaining, rb.failed, rb.to, rb.answered, rb.running)
}

func rolledBackMessage(rb *rollback) string {
	return fmt.Sprintf("rolled back to generation %d: generation %d failed (%s), and the %d devices that received it were given generation %d again (%d run it, %d failed it); generation %d is not published again until the spec changes",
		rb.to, rb.failed, rb.reason, rb.given, rb.to, rb.running, rb.given-rb.running, rb.failed)
}

// revisionName is the ControllerRevision of d's generation gen.
func revisionName(d *iotv1.Deployment, gen int64) string {
	return d.Name + "-score-" + strconv.FormatInt(gen, 10)
}

// revisionLabels are the labels of d's ControllerRevisions, by which they are listed.
func revisionLabels(d *iotv1.Deployment) map[string]string {
	return oplabels.Labels(revisionApp, d.Name)
}

// revisions are d's ControllerRevisions that d controls, newest first.
func (r *DeploymentReconciler) revisions(ctx context.Context, d *iotv1.Deployment) ([]appsv1.ControllerRevision, error) {
	var list appsv1.ControllerRevisionList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(d.Namespace), client.MatchingLabels(revisionLabels(d))); err != nil {
		return nil, fmt.Errorf("list the ControllerRevisions of %s: %w", d.Name, err)
	}
	out := list.Items[:0]
	for _, rev := range list.Items {
		if metav1.IsControlledBy(&rev, d) {
			out = append(out, rev)
		}
	}
	slices.SortFunc(out, func(a, b appsv1.ControllerRevision) int { return cmp.Compare(b.Revision, a.Revision) })
	return out, nil
}

// previousScore is the score to roll d's current generation back to, among its ControllerRevisions revs
// (newest first): generation want's when want is set (a rollback under way), else the newest kept
// generation before the current one. why says, when there is none, why not.
func (r *DeploymentReconciler) previousScore(d *iotv1.Deployment, revs []appsv1.ControllerRevision, want int64) (gen int64, score iotv1.Score, why string) {
	for _, rev := range revs {
		if rev.Revision >= d.Generation || (want != 0 && rev.Revision != want) {
			continue
		}
		if err := json.Unmarshal(rev.Data.Raw, &score); err != nil || score.PodmanV0 == nil {
			return 0, score, fmt.Sprintf("generation %d failed and rollout.onFailure is Rollback, but ControllerRevision %s does not hold a score; the rollout pauses instead", d.Generation, rev.Name)
		}
		// The kept score passed the policy when it was the spec; the policy may have changed since.
		for _, svc := range score.PodmanV0.Services {
			if msg := r.Policy.Images.Check(svc.Image); msg != "" {
				return 0, score, fmt.Sprintf("generation %d failed and rollout.onFailure is Rollback, but generation %d's score is outside the operator's policy now (service %s: %s); the rollout pauses instead", d.Generation, rev.Revision, svc.Name, msg)
			}
		}
		return rev.Revision, score, ""
	}
	if want != 0 {
		return 0, score, fmt.Sprintf("generation %d failed and was being rolled back to generation %d, but ControllerRevision %s is gone; the rollout pauses: devices keep what they were given, and generation %d is not published again", d.Generation, want, revisionName(d, want), d.Generation)
	}
	return 0, score, fmt.Sprintf("generation %d failed and rollout.onFailure is Rollback, but no earlier generation completed its rollout (or its ControllerRevision was pruned or deleted); the rollout pauses instead", d.Generation)
}

// reconcileRevision keeps the current generation's score as a ControllerRevision once its rollout is
// complete (every selected device runs it), and prunes the oldest beyond rollout.revisionHistoryLimit.
// What it saved is remembered, so an unchanged Deployment writes nothing.
func (r *DeploymentReconciler) reconcileRevision(ctx context.Context, s *deploymentScope) (ctrl.Result, error) {
	p := s.progress
	if s.store == nil || s.counting || s.natsError != "" || s.invalidSelector != "" || s.rollback != nil ||
		p.Matched == 0 || p.Succeeded < p.Matched {
		return ctrl.Result{}, nil
	}
	gen := s.d.Generation
	if r.saved.get(s.d.UID) == gen {
		return ctrl.Result{}, nil
	}
	name := revisionName(s.d, gen)
	live := &appsv1.ControllerRevision{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.d.Namespace, Name: name}, live)
	switch {
	case apierrors.IsNotFound(err):
		data, err := json.Marshal(s.d.Spec.Score)
		if err != nil {
			return ctrl.Result{}, err
		}
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.d.Namespace, Name: name, Labels: revisionLabels(s.d)},
			Data:       runtime.RawExtension{Raw: data},
			Revision:   gen,
		}
		if err := controllerutil.SetControllerReference(s.d, rev, r.Client.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Create(ctx, rev); err != nil {
			return ctrl.Result{}, fmt.Errorf("keep the score of generation %d: %w", gen, err)
		}
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("read ControllerRevision %s: %w", name, err)
	case !metav1.IsControlledBy(live, s.d):
		// Never adopted: the name is taken by an object that is not this Deployment's.
		s.Warn(iotv1.ReasonRollbackUnavailable, fmt.Sprintf("ControllerRevision %s exists and is not this Deployment's: the score of generation %d is not kept, and a later rollback cannot return to it", name, gen))
		r.saved.set(s.d.UID, gen)
		return ctrl.Result{}, nil
	}
	if err := r.pruneRevisions(ctx, s.d); err != nil {
		return ctrl.Result{}, err
	}
	r.saved.set(s.d.UID, gen)
	return ctrl.Result{}, nil
}

// pruneRevisions deletes d's oldest ControllerRevisions beyond rollout.revisionHistoryLimit, never the one
// a rollback of the current generation returns to.
func (r *DeploymentReconciler) pruneRevisions(ctx context.Context, d *iotv1.Deployment) error {
	limit := int(d.Spec.Rollout.RevisionHistoryLimit)
	if limit < 1 {
		limit = 10
	}
	revs, err := r.revisions(ctx, d)
	if err != nil || len(revs) <= limit {
		return err
	}
	var inUse int64
	if rb := d.Status.RolledBackTo; rb != nil && rb.FailedGeneration == d.Generation {
		inUse = rb.Generation
	}
	for i := limit; i < len(revs); i++ {
		if revs[i].Revision == inUse {
			continue
		}
		if err := r.Client.Delete(ctx, &revs[i], client.Preconditions{UID: &revs[i].UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("prune ControllerRevision %s: %w", revs[i].Name, err)
		}
	}
	return nil
}

// savedRevisions remembers, per Deployment, the last generation whose score was kept: an optimization
// only (the ControllerRevisions are the record), forgotten on restart.
type savedRevisions struct {
	mu sync.Mutex
	m  map[types.UID]int64
}

func (v *savedRevisions) get(uid types.UID) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[uid]
}

func (v *savedRevisions) set(uid types.UID, gen int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[types.UID]int64{}
	}
	v.m[uid] = gen
}

func (v *savedRevisions) forget(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, uid)
}
