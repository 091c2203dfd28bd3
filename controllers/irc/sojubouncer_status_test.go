package irc

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/reconcile"
)

func TestSojuDeploymentAvailable(t *testing.T) {
	available := []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	tests := []struct {
		name string
		d    appsv1.Deployment
		want bool
	}{
		{"new", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false},
		{"not rolled", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: appsv1.DeploymentStatus{ObservedGeneration: 2, AvailableReplicas: 1, Conditions: available}}, false},
		{"available", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1, AvailableReplicas: 1, Conditions: available}}, true},
		{"unavailable", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Message: "init container failing"}}}}, false},
	}
	for _, tt := range tests {
		if got, msg := sojuDeploymentAvailable(&tt.d); got != tt.want || msg == "" {
			t.Errorf("%s: %v, %q; want %v", tt.name, got, msg, tt.want)
		}
	}
}

// TestSojuReadyOrder checks that Ready names the part the user must look at first: the cleanup of a
// deleted bouncer, then the database, which every later part waits for.
func TestSojuReadyOrder(t *testing.T) {
	conds := []metav1.Condition{
		{Type: ircv1.ConditionConfig, Status: metav1.ConditionFalse, Reason: ircv1.ReasonWaiting},
		{Type: ircv1.ConditionDatabase, Status: metav1.ConditionFalse, Reason: ircv1.ReasonUnreachable},
	}
	if got := reconcile.Summary(conds, sojuParts, ircv1.ReasonReady, "").Reason; got != ircv1.ReasonUnreachable {
		t.Errorf("Ready reason %s, want the database's", got)
	}
	conds = append(conds, metav1.Condition{Type: ircv1.ConditionCleanup, Status: metav1.ConditionFalse, Reason: ircv1.ReasonCleanupBlocked})
	if got := reconcile.Summary(conds, sojuParts, ircv1.ReasonReady, "").Reason; got != ircv1.ReasonCleanupBlocked {
		t.Errorf("Ready reason %s, want the cleanup's", got)
	}
}
