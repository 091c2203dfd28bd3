package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSummary(t *testing.T) {
	order := []string{"StorageReady", "CertificateReady", "DeploymentAvailable", "ServiceReady"}
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	tests := []struct {
		name    string
		conds   []metav1.Condition
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"no parts yet", nil, metav1.ConditionTrue, "Ready", "all good"},
		{"all parts true", []metav1.Condition{
			cond("StorageReady", metav1.ConditionTrue, "Applied", ""),
			cond("DeploymentAvailable", metav1.ConditionTrue, "Ready", ""),
		}, metav1.ConditionTrue, "Ready", "all good"},
		{"the first waiting part in order gives the reason, all are named in order", []metav1.Condition{
			cond("DeploymentAvailable", metav1.ConditionFalse, "DeploymentPending", "no pod"),
			cond("CertificateReady", metav1.ConditionFalse, "CertificatePending", "not issued"),
		}, metav1.ConditionFalse, "CertificatePending", "CertificateReady: not issued; DeploymentAvailable: no pod"},
		{"unknown counts as not ready", []metav1.Condition{
			cond("ServiceReady", metav1.ConditionUnknown, "ApplyFailed", "timeout"),
		}, metav1.ConditionFalse, "ApplyFailed", "ServiceReady: timeout"},
		{"an old Ready condition and conditions outside the order are ignored", []metav1.Condition{
			cond("Ready", metav1.ConditionFalse, "Old", "old"),
			cond("SomeoneElses", metav1.ConditionFalse, "Theirs", "theirs"),
		}, metav1.ConditionTrue, "Ready", "all good"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summary(tt.conds, order, "Ready", "all good")
			if got.Type != ConditionReady || got.Status != tt.status || got.Reason != tt.reason || got.Message != tt.message {
				t.Errorf("Summary = %s/%s/%s %q, want Ready/%s/%s %q", got.Type, got.Status, got.Reason, got.Message, tt.status, tt.reason, tt.message)
			}
		})
	}
}

func TestSetKeepsTransitionTime(t *testing.T) {
	then := metav1.Unix(100, 0)
	conds := []metav1.Condition{{Type: "A", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: then}}
	Set(&conds, metav1.Condition{Type: "A", Status: metav1.ConditionTrue, Reason: "R2", Message: "m"})
	if !conds[0].LastTransitionTime.Equal(&then) || conds[0].Reason != "R2" {
		t.Errorf("same status: %+v, want the old transition time and the new reason", conds[0])
	}
	Set(&conds, metav1.Condition{Type: "A", Status: metav1.ConditionFalse, Reason: "R3"})
	if conds[0].LastTransitionTime.Equal(&then) {
		t.Error("a new status must move the transition time")
	}
	Drop(&conds, "A")
	if len(conds) != 0 {
		t.Errorf("Drop left %+v", conds)
	}
}
