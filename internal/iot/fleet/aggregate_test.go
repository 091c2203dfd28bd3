package fleet

import (
	"testing"
	"time"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

func TestSeverity(t *testing.T) {
	tests := []struct {
		name  string
		phase Phase
		gen   int64
		want  iotv1.EventSeverity
	}{
		{"a failure of the current generation", PhaseFailed, 3, iotv1.SeverityError},
		{"a failure of an older generation", PhaseFailed, 2, iotv1.SeverityWarn},
		{"a failure of a newer generation than the status describes", PhaseFailed, 4, iotv1.SeverityWarn},
		{"a recovery", PhaseRunning, 3, iotv1.SeverityInfo},
		{"a recovery on an older generation", PhaseRunning, 2, iotv1.SeverityInfo},
		{"pending", PhasePending, 3, iotv1.SeverityInfo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Severity(Event{Phase: tt.phase, Generation: tt.gen}, 3); got != tt.want {
				t.Errorf("Severity = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestEventsCarrySeverityAndDeployment(t *testing.T) {
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	s := Snapshot{Events: []Event{
		{At: at, Device: "dev-1", Generation: 2, Phase: PhaseRunning},
		{At: at, Device: "dev-2", Generation: 2, Phase: PhaseFailed, Message: "pull"},
	}}
	got := Events(s, 2, "web")
	if len(got) != 2 || got[0].Severity != iotv1.SeverityInfo || got[1].Severity != iotv1.SeverityError ||
		got[0].Deployment != "web" || got[1].Deployment != "web" || got[1].Device != "dev-2" {
		t.Fatalf("events %+v", got)
	}
}

func TestAggregateLastErrorDeviceID(t *testing.T) {
	s := Snapshot{LastError: &Event{Device: "dev-7", Phase: PhaseFailed, Message: "boom", At: time.Now()}}
	a := Aggregate(s, 1, 1, 0)
	if a.LastError == nil || a.LastError.DeviceID != "dev-7" || a.LastError.Device != "dev-7" {
		t.Fatalf("lastError %+v, want deviceId and device dev-7", a.LastError)
	}
}

func TestHeartbeatTimes(t *testing.T) {
	old := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	recent := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	known := BeatRange{Oldest: old, Newest: recent, Step: BeatStep, Known: true}
	tests := []struct {
		name               string
		c                  SelectionCounts
		wantOld, wantNewer *time.Time
	}{
		{"none stale", SelectionCounts{Matched: 3, Beats: BeatRange{Known: true}}, nil, nil},
		{"some stale: the oldest only", SelectionCounts{Matched: 3, Stale: 2, Beats: known}, &old, nil},
		{"every one stale: both", SelectionCounts{Matched: 2, Stale: 2, Beats: known}, &old, &recent},
		{"a stale device's time unknown: neither", SelectionCounts{Matched: 2, Stale: 2, Beats: BeatRange{Oldest: old, Newest: recent}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, n := HeartbeatTimes(tt.c)
			if (o == nil) != (tt.wantOld == nil) || o != nil && !o.Time.Equal(*tt.wantOld) {
				t.Errorf("oldest %v, want %v", o, tt.wantOld)
			}
			if (n == nil) != (tt.wantNewer == nil) || n != nil && !n.Time.Equal(*tt.wantNewer) {
				t.Errorf("newest %v, want %v", n, tt.wantNewer)
			}
		})
	}
}
