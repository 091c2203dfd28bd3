package reconcile

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fail records a part that is not ready for a reason only the user (or a server the user runs) can fix:
// the part's condition is False with reason and msg, and a Warning event says so when the part was not
// already False for the same reason in s.Before (the conditions as the reconcile read them). A retry or a
// periodic recheck that finds the same failure again is then neither another event nor, the status
// being unchanged, a write.
func (s *Session) Fail(condType, reason, msg string) {
	if Changed(s.Before, condType, metav1.ConditionFalse, reason) {
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

// Refuse records a part refused for a reason the user fixes where the message is the news (what to fix
// now: which policy rule, which Environments hold a deletion): the part's condition is False with reason
// and msg, and a Warning event says so when the condition in s.Before did not already say exactly that
// (WarnOnce). A spec edited from one violation to another keeps the reason but gets a Warning of its own;
// the same refusal found again is neither an event nor a write.
func (s *Session) Refuse(condType, reason, msg string) {
	s.WarnOnce(condType, reason, msg)
	s.Set(condType, metav1.ConditionFalse, reason, msg)
}

// WarnOnce emits the Warning event (reason, msg) unless the condition of type condType in s.Before (the
// conditions as the reconcile read them) is already False with that reason and message: the one place
// "warn only when the user has not been told this" is decided. Refuse, ApplyFailed and MissingAPI call
// it; a step calls it itself when the condition it sets is another one (a Ready summed up later, several
// parts at once).
func (s *Session) WarnOnce(condType, reason, msg string) {
	if !Said(s.Before, condType, metav1.ConditionFalse, reason, msg) {
		s.Warn(reason, msg)
	}
}

// Said says whether the condition of type condType in before is status with reason and msg already.
func Said(before []metav1.Condition, condType string, status metav1.ConditionStatus, reason, msg string) bool {
	old := meta.FindStatusCondition(before, condType)
	return old != nil && old.Status == status && old.Reason == reason && old.Message == msg
}
