package jobs

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFinishedAndCompletionTime(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	done := metav1.NewTime(created.Add(time.Minute))
	transition := metav1.NewTime(created.Add(2 * time.Minute))
	cond := func(ty batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: ty, Status: s, LastTransitionTime: transition}
	}
	tests := []struct {
		name     string
		status   batchv1.JobStatus
		finished batchv1.JobConditionType
		at       metav1.Time
	}{
		{name: "running", finished: "", at: created},
		{name: "success criteria met, not yet Complete", status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue)}}, finished: "", at: created},
		{name: "complete with a completion time", status: batchv1.JobStatus{CompletionTime: &done, Conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionTrue)}},
			finished: batchv1.JobComplete, at: done},
		{name: "complete without one: the condition's transition", status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionTrue)}},
			finished: batchv1.JobComplete, at: transition},
		{name: "failed", status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue), cond(batchv1.JobFailed, corev1.ConditionTrue)}},
			finished: batchv1.JobFailed, at: created},
		{name: "a Failed condition that is False", status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionFalse)}}, finished: "", at: created},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}, Status: tt.status}
			if got := Finished(job); got != tt.finished {
				t.Errorf("Finished = %q, want %q", got, tt.finished)
			}
			if got := CompletionTime(job); !got.Equal(&tt.at) {
				t.Errorf("CompletionTime = %v, want %v", got, tt.at)
			}
		})
	}
}
