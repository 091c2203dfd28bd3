package iot

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

func TestSummarize(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	counts := func(run, fail int64) fleet.Snapshot {
		return fleet.Snapshot{ByGeneration: map[int64]fleet.PhaseCounts{1: {Running: run, Failed: fail}}}
	}
	type want struct{ ready, progressing, available string }
	tests := []struct {
		name  string
		setup func(*deploymentScope)
		want  want
	}{
		{"no NATS configured", func(s *deploymentScope) { s.natsMissing = true },
			want{iotv1.ReasonNATSNotConfigured, iotv1.ReasonNATSNotConfigured, iotv1.ReasonNATSNotConfigured}},
		{"NATS unreachable", func(s *deploymentScope) { s.natsError = "connecting" },
			want{iotv1.ReasonNATSUnavailable, iotv1.ReasonNATSUnavailable, iotv1.ReasonNATSUnavailable}},
		{"invalid selector", func(s *deploymentScope) { s.invalidSelector = "bad operator" },
			want{iotv1.ReasonInvalidSelector, iotv1.ReasonInvalidSelector, iotv1.ReasonInvalidSelector}},
		{"no devices", func(*deploymentScope) {}, want{iotv1.ReasonNoDevices, iotv1.ReasonRollingOut, iotv1.ReasonNoDevices}},
		{"rolling out", func(s *deploymentScope) {
			s.snapshot, s.progress = counts(1, 0), fleet.Progress{Matched: 3, Published: 3, Succeeded: 1}
		}, want{iotv1.ReasonRollingOut, iotv1.ReasonRollingOut, iotv1.ReasonDevicesRunning}},
		{"waiting for a batch", func(s *deploymentScope) {
			s.snapshot, s.progress, s.hold = counts(0, 0), fleet.Progress{Matched: 3, Published: 1}, fleet.HoldBatch
		}, want{iotv1.ReasonNoneRunning, iotv1.ReasonWaitingForBatch, iotv1.ReasonNoneRunning}},
		{"too many failures", func(s *deploymentScope) {
			s.snapshot, s.progress, s.hold = counts(1, 1), fleet.Progress{Matched: 3, Published: 2}, fleet.HoldFailures
		}, want{iotv1.ReasonTooManyFailures, iotv1.ReasonTooManyFailures, iotv1.ReasonTooManyFailures}},
		{"complete", func(s *deploymentScope) {
			s.snapshot, s.progress = counts(3, 0), fleet.Progress{Matched: 3, Published: 3}
		}, want{iotv1.ReasonReady, iotv1.ReasonRolloutComplete, iotv1.ReasonDevicesRunning}},
		{"paused", func(s *deploymentScope) {
			s.d.Spec.Paused = true
			s.snapshot, s.progress = counts(3, 0), fleet.Progress{Matched: 3, Published: 3}
		}, want{iotv1.ReasonPaused, iotv1.ReasonPaused, iotv1.ReasonDevicesRunning}},
		{"past the progress deadline", func(s *deploymentScope) {
			s.d.Status.ObservedGeneration = 1
			s.d.Status.PublishedDevices = 3
			s.d.Status.Aggregate.Succeeded = 1
			s.d.Status.LastProgressTime = &metav1.Time{Time: now.Add(-11 * time.Minute)}
			s.snapshot, s.progress = counts(1, 0), fleet.Progress{Matched: 3, Published: 3}
		}, want{iotv1.ReasonProgressDeadlineExceeded, iotv1.ReasonProgressDeadlineExceeded, iotv1.ReasonDevicesRunning}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fleettest.Deployment("ns", "web", "x", "img:1")
			d.Generation = 1
			d.Spec.Rollout.ProgressDeadlineSeconds = 600
			r := &DeploymentReconciler{Recorder: record.NewFakeRecorder(10)}
			s := r.newDeploymentScope(d, nil)
			tt.setup(s)
			s.status = d.Status.DeepCopy()
			s.Conditions = &s.status.Conditions
			st := s.summarize(now)
			got := want{}
			for _, c := range st.Conditions {
				switch c.Type {
				case reconcile.ConditionReady:
					got.ready = c.Reason
				case iotv1.ConditionProgressing:
					got.progressing = c.Reason
				case iotv1.ConditionAvailable:
					got.available = c.Reason
				}
			}
			if got != tt.want {
				t.Errorf("reasons (ready, progressing, available) = %+v, want %+v", got, tt.want)
			}
			if st.ObservedGeneration != 1 {
				t.Errorf("observedGeneration = %d", st.ObservedGeneration)
			}
		})
	}
}
