package irc

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// TestSojuDeploymentAvailable's cases are in internal/kit/reconcile/readiness_test.go (TestDeploymentReady), with
// the kit's DeploymentReady (kstatus) that replaced sojuDeploymentAvailable.

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
