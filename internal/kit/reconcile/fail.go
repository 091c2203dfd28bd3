package reconcile

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fail records a part that is not ready for a reason only the user (or a server the user runs) can fix:
// the part's condition is False with reason and msg, and a Warning event says so when the part was not
// already False for the same reason in before (the conditions as the reconcile read them). A retry or a
// periodic recheck that finds the same failure again is then neither another event nor, the status
// being unchanged, a write.
func (s *Session) Fail(before []metav1.Condition, condType, reason, msg string) {
	if Changed(before, condType, metav1.ConditionFalse, reason) {
		s.Warn(reason, msg)
	}
	s.Set(condType, metav1.ConditionFalse, reason, msg)
}

// Changed says whether the condition of type condType in before differs from status and reason (a
// condition that is not there differs): whether a state is news worth an event. The message does not
// count, since it may carry details (an address, an error's text) that change while the state does not.
func Changed(before []metav1.Condition, condType string, status metav1.ConditionStatus, reason string) bool {
	old := meta.FindStatusCondition(before, condType)
	return old == nil || old.Status != status || old.Reason != reason
}
