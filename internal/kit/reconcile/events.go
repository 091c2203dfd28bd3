package reconcile

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// The session is the one way a controller emits events about its owner, so that every event goes
// through the same recorder, with the same type constants and a CamelCase reason constant.

// Normal emits a Normal event about the owner: a change the operator made, or a state the user waited
// for (a server that answers, a database dropped).
func (s *Session) Normal(reason, message string) {
	s.Event(corev1.EventTypeNormal, reason, message)
}

// Normalf is Normal with a formatted message.
func (s *Session) Normalf(reason, format string, args ...any) {
	s.Normal(reason, fmt.Sprintf(format, args...))
}

// Warnf is Warn with a formatted message.
func (s *Session) Warnf(reason, format string, args ...any) {
	s.Warn(reason, fmt.Sprintf(format, args...))
}

// Event emits an event of eventType (corev1.EventTypeNormal or corev1.EventTypeWarning) about the owner,
// for a decision that yields either.
func (s *Session) Event(eventType, reason, message string) {
	s.Recorder.Event(s.Owner, eventType, reason, message)
}
