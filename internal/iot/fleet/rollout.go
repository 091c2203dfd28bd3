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
