package backup

import (
	"testing"
	"time"
)

// A Backup's name gives back the run it stands for, and only a name of the schedule's own does.
func TestRunOf(t *testing.T) {
	run := time.Date(2026, 1, 10, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		sched, name string
		ok          bool
	}{
		{"nightly", backupName("nightly", run), true},
		{"nightly", backupName("nightly", run.In(time.FixedZone("CET", 3600))), true},
		{"nightly", "nightly-2026011003000", false},  // one digit short
		{"nightly", "nightly-20261310030000", false}, // month 13
		{"nightly", "weekly-20260110030000", false},
		{"night", "nightly-20260110030000", false},
		{"nightly", "nightly-manual", false},
	}
	for _, tt := range tests {
		got, ok := runOf(tt.sched, tt.name)
		if ok != tt.ok || (ok && !got.Equal(run)) {
			t.Errorf("runOf(%q, %q) = %v, %v; want %v, %v", tt.sched, tt.name, got, ok, run, tt.ok)
		}
	}
}
