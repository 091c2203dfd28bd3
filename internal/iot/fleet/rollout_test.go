package fleet

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

func batched(size, maxUnavailable intstr.IntOrString, threshold int32) iotv1.Rollout {
	return iotv1.Rollout{Strategy: iotv1.RolloutBatched, Batched: &iotv1.BatchedRollout{
		BatchSize: size, MaxUnavailable: maxUnavailable, SuccessThreshold: threshold}}
}

func TestTarget(t *testing.T) {
	two, pct10, zero := intstr.FromInt32(2), intstr.FromString("10%"), intstr.FromInt32(0)
	tests := []struct {
		name string
		r    iotv1.Rollout
		p    Progress
		want int
		hold Hold
	}{
		{"immediate gives every device", iotv1.Rollout{Strategy: iotv1.RolloutImmediate}, Progress{Matched: 7}, 7, HoldNone},
		{"empty strategy is immediate", iotv1.Rollout{}, Progress{Matched: 3}, 3, HoldNone},
		{"first batch", batched(two, zero, 100), Progress{Matched: 5}, 2, HoldNone},
		{"batch not through", batched(two, zero, 100), Progress{Matched: 5, Published: 2, Succeeded: 1}, 2, HoldBatch},
		{"batch through", batched(two, zero, 100), Progress{Matched: 5, Published: 2, Succeeded: 2}, 4, HoldNone},
		{"last batch is short", batched(two, zero, 100), Progress{Matched: 5, Published: 4, Succeeded: 4}, 5, HoldNone},
		{"all published", batched(two, zero, 100), Progress{Matched: 5, Published: 5, Succeeded: 3}, 5, HoldNone},
		{"threshold 50 lets half through", batched(two, zero, 50), Progress{Matched: 5, Published: 2, Succeeded: 1}, 4, HoldNone},
		{"a failure stops at zero unavailable", batched(two, zero, 50), Progress{Matched: 5, Published: 2, Succeeded: 1, Failed: 1}, 2, HoldFailures},
		{"failures within maxUnavailable", batched(two, intstr.FromInt32(1), 50), Progress{Matched: 5, Published: 2, Succeeded: 1, Failed: 1}, 4, HoldNone},
		{"percent batch rounds up", batched(pct10, zero, 100), Progress{Matched: 15}, 2, HoldNone},
		{"percent batch of a tiny fleet is one device", batched(intstr.FromString("1%"), zero, 100), Progress{Matched: 3}, 1, HoldNone},
		{"percent maxUnavailable rounds down", batched(two, intstr.FromString("10%"), 30), Progress{Matched: 15, Published: 3, Succeeded: 1, Failed: 2}, 3, HoldFailures},
		{"no devices", batched(two, zero, 100), Progress{}, 0, HoldNone},
		{"fleet shrank below published", batched(two, zero, 100), Progress{Matched: 2, Published: 4, Succeeded: 4}, 2, HoldNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, hold := Target(tt.r, tt.p)
			if got != tt.want || hold != tt.hold {
				t.Errorf("Target = %d, %q; want %d, %q", got, hold, tt.want, tt.hold)
			}
		})
	}
}

func TestRollbackBatch(t *testing.T) {
	two, zero := intstr.FromInt32(2), intstr.FromInt32(0)
	tests := []struct {
		name    string
		r       iotv1.Rollout
		matched int
		p       RollbackProgress
		want    int
	}{
		{"immediate gives every remaining device at once", iotv1.Rollout{Strategy: iotv1.RolloutImmediate}, 10, RollbackProgress{Remaining: 7}, 7},
		{"empty strategy is immediate", iotv1.Rollout{}, 10, RollbackProgress{Remaining: 3, Given: 2}, 3},
		{"nothing remaining", batched(two, zero, 100), 10, RollbackProgress{Given: 4, Answered: 4}, 0},
		{"first batch", batched(two, zero, 100), 10, RollbackProgress{Remaining: 5}, 2},
		{"batch not answered", batched(two, zero, 100), 10, RollbackProgress{Remaining: 3, Given: 2, Answered: 1}, 0},
		{"batch answered", batched(two, zero, 100), 10, RollbackProgress{Remaining: 3, Given: 2, Answered: 2}, 2},
		{"last batch is short", batched(two, zero, 100), 10, RollbackProgress{Remaining: 1, Given: 4, Answered: 4}, 1},
		{"threshold 50 lets half through", batched(two, zero, 50), 10, RollbackProgress{Remaining: 3, Given: 2, Answered: 1}, 2},
		{"percent batch of the selected devices", batched(intstr.FromString("20%"), zero, 100), 10, RollbackProgress{Remaining: 5}, 2},
		{"percent batch of a tiny fleet is one device", batched(intstr.FromString("1%"), zero, 100), 3, RollbackProgress{Remaining: 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RollbackBatch(tt.r, tt.matched, tt.p); got != tt.want {
				t.Errorf("RollbackBatch = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFailing(t *testing.T) {
	two, zero, one := intstr.FromInt32(2), intstr.FromInt32(0), intstr.FromInt32(1)
	tests := []struct {
		name     string
		r        iotv1.Rollout
		p        Progress
		deadline bool
		want     Hold
	}{
		{"healthy batched", batched(two, zero, 100), Progress{Matched: 5, Published: 2, Succeeded: 2}, false, HoldNone},
		{"a failure at zero unavailable", batched(two, zero, 100), Progress{Matched: 5, Published: 2, Succeeded: 1, Failed: 1}, false, HoldFailures},
		{"failures within maxUnavailable", batched(two, one, 100), Progress{Matched: 5, Published: 2, Succeeded: 1, Failed: 1}, false, HoldNone},
		{"failures win over the deadline", batched(two, zero, 100), Progress{Matched: 5, Failed: 1}, true, HoldFailures},
		{"deadline passed", batched(two, one, 100), Progress{Matched: 5, Published: 2, Succeeded: 1}, true, HoldDeadline},
		{"immediate never fails on failures", iotv1.Rollout{Strategy: iotv1.RolloutImmediate}, Progress{Matched: 5, Published: 5, Failed: 5}, false, HoldNone},
		{"immediate fails on the deadline", iotv1.Rollout{Strategy: iotv1.RolloutImmediate}, Progress{Matched: 5, Published: 5, Failed: 5}, true, HoldDeadline},
		{"a complete rollout never fails", iotv1.Rollout{}, Progress{Matched: 3, Published: 3, Succeeded: 3}, true, HoldNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Failing(tt.r, tt.p, tt.deadline); got != tt.want {
				t.Errorf("Failing = %q, want %q", got, tt.want)
			}
		})
	}
}
