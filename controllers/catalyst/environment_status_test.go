package catalyst

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

func TestPhase(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	nsReady := cond(catalystv1.ConditionNamespaceReady, metav1.ConditionTrue, catalystv1.ReasonApplied)
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  catalystv1.Phase
	}{
		{"nothing yet", nil, catalystv1.PhasePending},
		{"project missing", []metav1.Condition{cond(catalystv1.ConditionNamespaceReady, metav1.ConditionFalse, catalystv1.ReasonProjectNotFound)}, catalystv1.PhaseFailed},
		{"namespace taken", []metav1.Condition{cond(catalystv1.ConditionNamespaceReady, metav1.ConditionFalse, catalystv1.ReasonNamespaceConflict)}, catalystv1.PhaseFailed},
		{"namespace terminating", []metav1.Condition{cond(catalystv1.ConditionNamespaceReady, metav1.ConditionFalse, catalystv1.ReasonNamespaceTerminating)}, catalystv1.PhasePending},
		{"project deleting", []metav1.Condition{cond(catalystv1.ConditionNamespaceReady, metav1.ConditionFalse, catalystv1.ReasonProjectDeleting)}, catalystv1.PhasePending},
		{"read error", []metav1.Condition{cond(catalystv1.ConditionNamespaceReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting)}, catalystv1.PhasePending},
		{"certificate pending", []metav1.Condition{nsReady, cond(catalystv1.ConditionIngressReady, metav1.ConditionFalse, catalystv1.ReasonCertificatePending),
			cond(catalystv1.ConditionReady, metav1.ConditionFalse, catalystv1.ReasonCertificatePending)}, catalystv1.PhaseDeploying},
		{"no cert-manager", []metav1.Condition{nsReady, cond(catalystv1.ConditionIngressReady, metav1.ConditionFalse, catalystv1.ReasonAPINotAvailable)}, catalystv1.PhaseFailed},
		{"ingress refused", []metav1.Condition{nsReady, cond(catalystv1.ConditionIngressReady, metav1.ConditionFalse, catalystv1.ReasonApplyFailed)}, catalystv1.PhaseFailed},
		{"ready, the image found", []metav1.Condition{nsReady,
			cond(catalystv1.ConditionIngressReady, metav1.ConditionTrue, catalystv1.ReasonReady),
			cond(catalystv1.ConditionBuildReady, metav1.ConditionTrue, catalystv1.ReasonImageExists),
			cond(catalystv1.ConditionReady, metav1.ConditionTrue, catalystv1.ReasonReady)}, catalystv1.PhaseReady},
		{"building", []metav1.Condition{nsReady, cond(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonBuilding)}, catalystv1.PhaseBuilding},
		{"registry unreachable", []metav1.Condition{nsReady, cond(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonRegistryUnreachable)}, catalystv1.PhaseBuilding},
		{"build failed", []metav1.Condition{nsReady, cond(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonBuildFailed)}, catalystv1.PhaseFailed},
		{"no build configured", []metav1.Condition{nsReady, cond(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonBuildNotConfigured)}, catalystv1.PhaseFailed},
		{"image missing after the build", []metav1.Condition{nsReady, cond(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonImageMissingAfterBuild)}, catalystv1.PhaseFailed},
		{"no commit yet", []metav1.Condition{nsReady, cond(catalystv1.ConditionBuildReady, metav1.ConditionFalse, catalystv1.ReasonCommitMissing)}, catalystv1.PhasePending},
		{"image found, certificate pending", []metav1.Condition{nsReady,
			cond(catalystv1.ConditionBuildReady, metav1.ConditionTrue, catalystv1.ReasonImagePushed),
			cond(catalystv1.ConditionIngressReady, metav1.ConditionFalse, catalystv1.ReasonCertificatePending)}, catalystv1.PhaseDeploying},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Phase(tt.conds); got != tt.want {
				t.Fatalf("Phase = %s, want %s", got, tt.want)
			}
		})
	}
}
