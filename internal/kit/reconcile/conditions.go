package reconcile

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionReady is the condition every API sums its parts up in.
const ConditionReady = "Ready"

// Set records condition c, keeping its lastTransitionTime when its status did not change.
func Set(conds *[]metav1.Condition, c metav1.Condition) {
	meta.SetStatusCondition(conds, c)
}

// Drop removes the condition of type t: its part no longer exists.
func Drop(conds *[]metav1.Condition, t string) {
	meta.RemoveStatusCondition(conds, t)
}

// Summary is Ready computed from the part conditions named in order: True with readyReason and
// readyMessage when every part present is True (a part without a condition does not count), otherwise
// False with the first part's reason that is not True and the messages of all of them, in order.
func Summary(conds []metav1.Condition, order []string, readyReason, readyMessage string) metav1.Condition {
	var waiting []string
	reason := ""
	for _, t := range order {
		c := meta.FindStatusCondition(conds, t)
		if c == nil || c.Status == metav1.ConditionTrue {
			continue
		}
		if reason == "" {
			reason = c.Reason
		}
		waiting = append(waiting, fmt.Sprintf("%s: %s", t, c.Message))
	}
	if len(waiting) == 0 {
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: readyReason, Message: readyMessage}
	}
	return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: strings.Join(waiting, "; ")}
}
