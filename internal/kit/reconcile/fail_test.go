package reconcile

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestFail(t *testing.T) {
	const part = "SecretReady"
	cond := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: part, Status: status, Reason: reason, Message: "as read"}}
	}
	tests := []struct {
		name      string
		before    []metav1.Condition
		wantEvent bool
	}{
		{name: "first failure", before: nil, wantEvent: true},
		{name: "was ready", before: cond(metav1.ConditionTrue, "Ready"), wantEvent: true},
		{name: "was unknown for the same reason", before: cond(metav1.ConditionUnknown, "SecretNotFound"), wantEvent: true},
		{name: "failed for another reason", before: cond(metav1.ConditionFalse, "SecretInvalid"), wantEvent: true},
		// The same failure found again: a new message alone (an error's text) is no news.
		{name: "the same failure", before: cond(metav1.ConditionFalse, "SecretNotFound"), wantEvent: false},
		{name: "another part failed", before: []metav1.Condition{{Type: "ServerReady", Status: metav1.ConditionFalse, Reason: "SecretNotFound"}}, wantEvent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(4)
			n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			conds := append([]metav1.Condition(nil), tt.before...)
			s := &Session{Owner: n, Conditions: &conds, Before: tt.before, Recorder: rec}

			s.Fail(part, "SecretNotFound", "Secret x does not exist")

			if got := len(rec.Events); (got == 1) != tt.wantEvent || got > 1 {
				t.Fatalf("%d events, want an event: %v", got, tt.wantEvent)
			}
			if tt.wantEvent {
				if e := <-rec.Events; e != "Warning SecretNotFound Secret x does not exist" {
					t.Errorf("event %q", e)
				}
			}
			c := meta.FindStatusCondition(conds, part)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "SecretNotFound" || c.Message != "Secret x does not exist" || c.ObservedGeneration != 3 {
				t.Errorf("condition %+v, want False SecretNotFound for generation 3", c)
			}
		})
	}
}

// TestChanged moved here from controllers/homelab with the helper it tests.
func TestChanged(t *testing.T) {
	before := []metav1.Condition{{Type: "Server", Status: metav1.ConditionFalse, Reason: "Unreachable", Message: "old"}}
	tests := []struct {
		name string
		c    metav1.Condition
		want bool
	}{
		{"same failure, new message", metav1.Condition{Type: "Server", Status: metav1.ConditionFalse, Reason: "Unreachable", Message: "new"}, false},
		{"another reason", metav1.Condition{Type: "Server", Status: metav1.ConditionFalse, Reason: "AuthenticationFailed"}, true},
		{"another status", metav1.Condition{Type: "Server", Status: metav1.ConditionTrue, Reason: "Unreachable"}, true},
		{"no condition before", metav1.Condition{Type: "Secret", Status: metav1.ConditionFalse, Reason: "SecretNotFound"}, true},
	}
	for _, tt := range tests {
		if got := Changed(before, tt.c.Type, tt.c.Status, tt.c.Reason); got != tt.want {
			t.Errorf("%s: Changed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRefuse(t *testing.T) {
	const part = "Ready"
	was := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: part, Status: status, Reason: reason, Message: msg}}
	}
	tests := []struct {
		name      string
		before    []metav1.Condition
		wantEvent bool
	}{
		{name: "first refusal", before: nil, wantEvent: true},
		{name: "was ready", before: was(metav1.ConditionTrue, "Ready", "rule 1 broken"), wantEvent: true},
		{name: "another reason", before: was(metav1.ConditionFalse, "Other", "rule 1 broken"), wantEvent: true},
		// The reason stays, the message is the news: what to fix now.
		{name: "another violation", before: was(metav1.ConditionFalse, "PolicyViolation", "rule 2 broken"), wantEvent: true},
		{name: "the same refusal", before: was(metav1.ConditionFalse, "PolicyViolation", "rule 1 broken"), wantEvent: false},
		{name: "another part said it", before: []metav1.Condition{{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "PolicyViolation", Message: "rule 1 broken"}}, wantEvent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(4)
			conds := append([]metav1.Condition(nil), tt.before...)
			s := &Session{Owner: &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Generation: 2}}, Conditions: &conds, Before: tt.before, Recorder: rec}

			s.Refuse(part, "PolicyViolation", "rule 1 broken")

			if got := len(rec.Events); (got == 1) != tt.wantEvent || got > 1 {
				t.Fatalf("%d events, want an event: %v", got, tt.wantEvent)
			}
			if tt.wantEvent {
				if e := <-rec.Events; e != "Warning PolicyViolation rule 1 broken" {
					t.Errorf("event %q", e)
				}
			}
			if !Said(conds, part, metav1.ConditionFalse, "PolicyViolation", "rule 1 broken") {
				t.Errorf("conditions %+v, want %s False PolicyViolation", conds, part)
			}
		})
	}
}
