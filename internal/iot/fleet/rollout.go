package fleet

import (
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// Progress is where a rollout of the current generation stands.
type Progress struct {
	// Matched is how many devices the selector selects.
	Matched int
	// Published is how many selected devices were given the current generation.
	Published int
	// Succeeded and Failed are the devices running, and failing, the current generation.
	Succeeded, Failed int
}

// Hold says why a rollout gives no further device the current generation.
type Hold string

const (
	// HoldNone is a rollout that may go on (or is through).
	HoldNone Hold = ""
	// HoldBatch is a batch below the success threshold.
	HoldBatch Hold = "WaitingForBatch"
	// HoldFailures is a rollout with more failures than maxUnavailable allows.
	HoldFailures Hold = "TooManyFailures"
	// HoldDeadline is a rollout that went without progress for longer than progressDeadlineSeconds
	// (Failing; Target never returns it).
	HoldDeadline Hold = "ProgressDeadlineExceeded"
)

// Target is how many selected devices should have the current generation now, and why not more: all of
// them for Immediate; for Batched, those already given it plus one batch, once the devices given it so
// far reached the success threshold, and as long as failures stay within maxUnavailable.
func Target(r iotv1.Rollout, p Progress) (int, Hold) {
	if r.Strategy != iotv1.RolloutBatched || r.Batched == nil {
		return p.Matched, HoldNone
	}
	b := r.Batched
	if p.Failed > scaled(b.MaxUnavailable, p.Matched, false) {
		return min(p.Published, p.Matched), HoldFailures
	}
	if p.Published >= p.Matched {
		return p.Matched, HoldNone
	}
	threshold := int64(b.SuccessThreshold)
	if threshold == 0 {
		threshold = 100
	}
	if p.Published > 0 && int64(p.Succeeded)*100 < threshold*int64(p.Published) {
		return p.Published, HoldBatch
	}
	return min(p.Published+max(scaled(b.BatchSize, p.Matched, true), 1), p.Matched), HoldNone
}

// scaled is a count or a percentage of total, rounded up or down; an invalid value (admission refuses
// them) counts as zero.
func scaled(v intstr.IntOrString, total int, roundUp bool) int {
	if v.Type == intstr.Int {
		return max(v.IntValue(), 0)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, roundUp)
	if err != nil {
		return 0
	}
	return max(min(n, math.MaxInt32), 0)
}

// RollbackProgress is where the rollback of a failed generation stands, among the selected devices
// that received it.
type RollbackProgress struct {
	// Remaining is how many of them still have the failed generation as their desired state.
	Remaining int
	// Given is how many of them were given the previous successful score again.
	Given int
	// Answered is how many of Given report the previous generation, running or failed.
	Answered int
}

// RollbackBatch is how many more devices a rollback gives the previous successful score now: every
// remaining one for Immediate; for Batched, one batch (the rollout's batchSize, of the selected devices
// matched), once the devices given it back so far reached the success threshold in answering (running it
// or failing it: a device that cannot run the old score either is no reason to leave the others on the
// failed one). maxUnavailable does not apply: a rollback is not rolled back.
func RollbackBatch(r iotv1.Rollout, matched int, p RollbackProgress) int {
	if p.Remaining <= 0 {
		return 0
	}
	if r.Strategy != iotv1.RolloutBatched || r.Batched == nil {
		return p.Remaining
	}
	b := r.Batched
	threshold := int64(b.SuccessThreshold)
	if threshold == 0 {
		threshold = 100
	}
	if p.Given > 0 && int64(p.Answered)*100 < threshold*int64(p.Given) {
		return 0
	}
	return min(max(scaled(b.BatchSize, matched, true), 1), p.Remaining)
}

// Failing says why a rollout of the current generation failed, or HoldNone: more devices failed it than
// maxUnavailable allows (HoldFailures; Batched only, as Target), or deadlineExceeded, the caller's
// reading of progressDeadlineSeconds (HoldDeadline). A rollout every selected device runs never fails.
func Failing(r iotv1.Rollout, p Progress, deadlineExceeded bool) Hold {
	if p.Matched > 0 && p.Succeeded >= p.Matched {
		return HoldNone
	}
	if r.Strategy == iotv1.RolloutBatched && r.Batched != nil && p.Failed > scaled(r.Batched.MaxUnavailable, p.Matched, false) {
		return HoldFailures
	}
	if deadlineExceeded {
		return HoldDeadline
	}
	return HoldNone
}
