package testutil

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// Warnings drains rec and returns the Warning events it held ("Warning <Reason> <message>"); the Normal
// ones are dropped.
func Warnings(rec *record.FakeRecorder) []string {
	var got []string
	for {
		select {
		case e := <-rec.Events:
			if strings.HasPrefix(e, corev1.EventTypeWarning+" ") {
				got = append(got, e)
			}
		default:
			return got
		}
	}
}

// WantWarnings drains rec and fails the test unless it held n Warning events; step names the moment for
// the message ("the same refusal found again").
func WantWarnings(t testing.TB, rec *record.FakeRecorder, step string, n int) {
	t.Helper()
	if got := Warnings(rec); len(got) != n {
		t.Errorf("%s: %d Warning events %q, want %d", step, len(got), got, n)
	}
}
