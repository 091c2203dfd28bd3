package pgrestore

import (
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
)

func TestJobState(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC))
	later := metav1.NewTime(at.Add(time.Minute))
	tests := []struct {
		name  string
		job   batchv1.Job
		state batchv1.JobConditionType
		done  metav1.Time
	}{
		{"running", batchv1.Job{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at}}, "", at},
		{"success criteria met is not the end", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}}}}, "", metav1.Time{}},
		{"complete", batchv1.Job{Status: batchv1.JobStatus{CompletionTime: &later, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: at}}}}, batchv1.JobComplete, later},
		{"complete without completionTime", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: at}}}}, batchv1.JobComplete, at},
		{"failed", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}, {Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}}, batchv1.JobFailed, metav1.Time{}},
		{"a condition that is False", batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}}}}, "", metav1.Time{}},
	}
	for _, tt := range tests {
		if got := jobs.Finished(&tt.job); got != tt.state {
			t.Errorf("%s: jobs.Finished = %q, want %q", tt.name, got, tt.state)
		}
		if got := jobs.CompletionTime(&tt.job); !got.Equal(&tt.done) {
			t.Errorf("%s: jobs.CompletionTime = %v, want %v", tt.name, got, tt.done)
		}
	}
}

func TestPendingAndFinal(t *testing.T) {
	src := &backupv1.RestoreSource{Backup: "nightly"}
	if Pending(nil, nil) || !Pending(src, nil) || Pending(src, &backupv1.RestoredFrom{}) {
		t.Error("Pending")
	}
	for _, r := range []string{backupv1.ReasonRestoreFailed, backupv1.ReasonTargetNotEmpty, backupv1.ReasonWrongKind, backupv1.ReasonSchemaTooNew} {
		if !isFinal(r) {
			t.Errorf("%s is not final", r)
		}
	}
	for _, r := range []string{backupv1.ReasonRestoring, backupv1.ReasonBackupNotFound, backupv1.ReasonBackupNotCompleted, backupv1.ReasonStoreNotReady, backupv1.ReasonOperatorImageUnknown} {
		if isFinal(r) {
			t.Errorf("%s is final: a wait would never end", r)
		}
	}
}

func TestMessageAndRedacted(t *testing.T) {
	f := &backupv1.RestoredFrom{Store: "main", SourceName: "a", ID: "20261128T150000Z-aaaaaaaa"}
	if got := Message(f); got != "restored from a/20261128T150000Z-aaaaaaaa of BackupStore main" {
		t.Errorf("Message = %q", got)
	}
	f.Backup = "a-nightly"
	if got := Message(f); got != "restored from Backup a-nightly (a/20261128T150000Z-aaaaaaaa of BackupStore main)" {
		t.Errorf("Message = %q", got)
	}
	err := Redacted(errors.New(`password "s3cr3t" refused for s3cr3t`), "s3cr3t")
	if err.Error() != `password "[redacted]" refused for [redacted]` {
		t.Errorf("Redacted = %v", err)
	}
	if Redacted(nil, "x") != nil || Redacted(errors.New("plain"), "").Error() != "plain" {
		t.Error("Redacted of nil or without a secret")
	}
}
