package iot

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// summarize computes the status from what the step found, at time now.
func (s *deploymentScope) summarize(now time.Time) *iotv1.DeploymentStatus {
	st := s.status
	gen := s.d.Generation
	if s.natsMissing {
		msg := "the operator runs without --nats-url: nothing is published to devices"
		for _, t := range []string{iotv1.ConditionProgressing, iotv1.ConditionAvailable, iotv1.ConditionReady} {
			s.Set(t, metav1.ConditionFalse, iotv1.ReasonNATSNotConfigured, msg)
		}
		s.setPaused()
		st.ObservedGeneration = gen
		return st
	}
	if s.natsError == "" && s.invalidSelector == "" {
		prev := st.Aggregate
		st.Aggregate = fleet.Aggregate(s.snapshot, gen, s.progress.Matched, s.stale)
		st.Aggregate.OldestHeartbeatAt, st.Aggregate.NewestHeartbeatAt = fleet.HeartbeatTimes(s.beats)
		st.RecentEvents = fleet.Events(s.snapshot, gen, s.d.Name)
		observeLag(now, s.oldest)
		if int(st.PublishedDevices) != s.progress.Published || st.ObservedGeneration != gen ||
			st.Aggregate.Succeeded > prev.Succeeded || st.LastProgressTime == nil {
			t := metav1.NewTime(now.Truncate(time.Second))
			st.LastProgressTime = &t
		}
		if st.ObservedGeneration == gen && prev.Failed == 0 && st.Aggregate.Failed > 0 && st.Aggregate.LastError != nil {
			s.Warn(iotv1.EventDeviceFailed, fmt.Sprintf("device %s failed generation %d: %s", st.Aggregate.LastError.Device, gen, st.Aggregate.LastError.Message))
		}
		st.PublishedDevices = int32(min(s.progress.Published, 1<<31-1))
	}
	st.ObservedGeneration = gen
	s.setPaused()
	s.setProgressing(now)
	s.setAvailable()
	s.setReady()
	return st
}

func (s *deploymentScope) setPaused() {
	if s.d.Spec.Paused {
		s.Set(iotv1.ConditionPaused, metav1.ConditionTrue, iotv1.ReasonPaused, "spec.paused holds the rollout; devices keep what they were given")
		return
	}
	s.Set(iotv1.ConditionPaused, metav1.ConditionFalse, iotv1.ReasonResumed, "the rollout is not paused")
}

// invalidSelectorMessage is Progressing's message for a target selector that does not parse.
func (s *deploymentScope) invalidSelectorMessage() string {
	return "spec.targetSelector: " + s.invalidSelector
}

func (s *deploymentScope) setProgressing(now time.Time) {
	a := s.status.Aggregate
	p := s.progress
	switch {
	case s.invalidSelector != "":
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonInvalidSelector, s.invalidSelectorMessage())
	case s.natsError != "":
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonNATSUnavailable, "NATS: "+s.natsError)
	case s.d.Spec.Paused:
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonPaused, "the rollout is paused")
	case s.rollback != nil && s.rollback.done:
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonRolledBack, rolledBackMessage(s.rollback))
	case s.rollback != nil:
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonRollingBack, rollingBackMessage(s.rollback))
	case s.rollbackUnavailable != "":
		s.WarnOnce(iotv1.ConditionProgressing, iotv1.ReasonRollbackUnavailable, s.rollbackUnavailable)
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonRollbackUnavailable, s.rollbackUnavailable)
	case p.Matched > 0 && int(a.Succeeded) == p.Matched:
		s.Set(iotv1.ConditionProgressing, metav1.ConditionTrue, iotv1.ReasonRolloutComplete,
			fmt.Sprintf("all %d selected devices run generation %d", p.Matched, s.d.Generation))
	case s.hold == fleet.HoldFailures:
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonTooManyFailures,
			fmt.Sprintf("%d devices failed generation %d, more than maxUnavailable allows; no further batch is published", a.Failed, s.d.Generation))
	case s.deadlineExceeded(now):
		s.Set(iotv1.ConditionProgressing, metav1.ConditionFalse, iotv1.ReasonProgressDeadlineExceeded,
			fmt.Sprintf("no progress for more than %ds: %d of %d selected devices run generation %d", s.d.Spec.Rollout.ProgressDeadlineSeconds, a.Succeeded, p.Matched, s.d.Generation))
	case s.hold == fleet.HoldBatch:
		s.Set(iotv1.ConditionProgressing, metav1.ConditionTrue, iotv1.ReasonWaitingForBatch,
			fmt.Sprintf("%d of %d devices given generation %d run it; the next batch waits for the success threshold", a.Succeeded, p.Published, s.d.Generation))
	default:
		s.Set(iotv1.ConditionProgressing, metav1.ConditionTrue, iotv1.ReasonRollingOut,
			fmt.Sprintf("%d of %d selected devices run generation %d (%d given it)", a.Succeeded, p.Matched, s.d.Generation, p.Published))
	}
}

// deadlineExceeded says whether the rollout went without progress for longer than its deadline, and
// otherwise asks for a reconcile when it would.
func (s *deploymentScope) deadlineExceeded(now time.Time) bool {
	secs := s.d.Spec.Rollout.ProgressDeadlineSeconds
	if secs <= 0 || s.status.LastProgressTime == nil || s.progress.Matched == 0 {
		return false
	}
	left := s.status.LastProgressTime.Add(time.Duration(secs) * time.Second).Sub(now)
	if left <= 0 {
		return true
	}
	s.requeue = reconcile.Soonest(s.requeue, ctrl.Result{RequeueAfter: left + time.Second})
	return false
}

func (s *deploymentScope) setAvailable() {
	a := s.status.Aggregate
	switch {
	case s.invalidSelector != "" || s.natsError != "":
		if c := meta.FindStatusCondition(s.status.Conditions, iotv1.ConditionAvailable); c == nil {
			reason := iotv1.ReasonNATSUnavailable
			if s.invalidSelector != "" {
				reason = iotv1.ReasonInvalidSelector
			}
			s.Set(iotv1.ConditionAvailable, metav1.ConditionUnknown, reason, "the fleet's state could not be read")
		}
	case s.progress.Matched == 0:
		s.Set(iotv1.ConditionAvailable, metav1.ConditionFalse, iotv1.ReasonNoDevices, "the target selector selects no registered device")
	case s.rollback != nil:
		reason := iotv1.ReasonRollingBack
		if s.rollback.done {
			reason = iotv1.ReasonRolledBack
		}
		s.Set(iotv1.ConditionAvailable, metav1.ConditionFalse, reason,
			fmt.Sprintf("generation %d failed and is taken back: the devices that received it are given generation %d again", s.rollback.failed, s.rollback.to))
	case s.hold == fleet.HoldFailures:
		s.Set(iotv1.ConditionAvailable, metav1.ConditionFalse, iotv1.ReasonTooManyFailures,
			fmt.Sprintf("%d devices failed generation %d", a.Failed, s.d.Generation))
	case a.Succeeded == 0:
		s.Set(iotv1.ConditionAvailable, metav1.ConditionFalse, iotv1.ReasonNoneRunning, "no selected device runs the current generation yet")
	default:
		s.Set(iotv1.ConditionAvailable, metav1.ConditionTrue, iotv1.ReasonDevicesRunning,
			fmt.Sprintf("%d of %d selected devices run generation %d", a.Succeeded, s.progress.Matched, s.d.Generation))
	}
}

// setReady sums the rollout up. It is not the kit's Summarize (Ready when every part is True): an iot
// Deployment is Ready only once its rollout is complete, and a rollout under way is Progressing True and
// may be Available True while Ready stays False, with Progressing's reason and message alone.
func (s *deploymentScope) setReady() {
	prog := meta.FindStatusCondition(s.status.Conditions, iotv1.ConditionProgressing)
	avail := meta.FindStatusCondition(s.status.Conditions, iotv1.ConditionAvailable)
	if prog != nil && prog.Reason == iotv1.ReasonRolloutComplete && !s.d.Spec.Paused {
		s.Set(iotv1.ConditionReady, metav1.ConditionTrue, iotv1.ReasonReady, prog.Message)
		return
	}
	switch {
	case prog != nil && prog.Status != metav1.ConditionTrue:
		s.Set(iotv1.ConditionReady, metav1.ConditionFalse, prog.Reason, prog.Message)
	case avail != nil && avail.Status != metav1.ConditionTrue:
		s.Set(iotv1.ConditionReady, metav1.ConditionFalse, avail.Reason, avail.Message)
	case prog != nil:
		s.Set(iotv1.ConditionReady, metav1.ConditionFalse, prog.Reason, prog.Message)
	}
}
