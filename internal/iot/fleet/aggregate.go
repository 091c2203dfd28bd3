package fleet

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// Aggregate is a deployment's status aggregate at generation gen: the counters' snapshot for that
// generation against the matched devices and the stale ones the controller found.
func Aggregate(s Snapshot, gen int64, matched, stale int) iotv1.Aggregate {
	cur := s.ByGeneration[gen]
	a := iotv1.Aggregate{
		MatchedDevices: clamp32(int64(matched)),
		Succeeded:      clamp32(cur.Running),
		Failed:         clamp32(cur.Failed),
		Updated:        clamp32(cur.total()),
		Stale:          clamp32(int64(stale)),
	}
	a.Pending = max(a.MatchedDevices-a.Succeeded-a.Failed, 0)
	if s.LastError != nil {
		a.LastError = &iotv1.DeviceError{DeviceID: s.LastError.Device, Device: s.LastError.Device, Message: s.LastError.Message,
			At: metav1.NewTime(s.LastError.At.Truncate(1e9))}
	}
	return a
}

// Events are a snapshot's events in the status' form, for the Deployment named name whose status
// describes generation gen.
func Events(s Snapshot, gen int64, name string) []iotv1.FleetEvent {
	var out []iotv1.FleetEvent
	for _, e := range s.Events {
		out = append(out, iotv1.FleetEvent{At: metav1.NewTime(e.At.Truncate(1e9)), Severity: Severity(e, gen),
			Deployment: name, Device: e.Device, Phase: string(e.Phase), Message: e.Message})
	}
	return out
}

// Severity ranks an event of a Deployment whose status describes generation gen: a failure of gen is an
// Error, a failure of another generation a Warn (the device failed what it was given before, or what
// the status has not caught up with), anything else (a recovery) Info.
func Severity(e Event, gen int64) iotv1.EventSeverity {
	switch {
	case e.Phase == PhaseFailed && e.Generation == gen:
		return iotv1.SeverityError
	case e.Phase == PhaseFailed:
		return iotv1.SeverityWarn
	}
	return iotv1.SeverityInfo
}

// HeartbeatTimes are the aggregate's oldestHeartbeatAt and newestHeartbeatAt from a selection's counts:
// the oldest while a selected device is stale, the newest only when every selected device is, both nil
// while the index does not know a stale device's last heartbeat.
func HeartbeatTimes(c SelectionCounts) (oldest, newest *metav1.Time) {
	if !c.Beats.Known || c.Stale == 0 || c.Beats.Oldest.IsZero() {
		return nil, nil
	}
	o := metav1.NewTime(c.Beats.Oldest)
	oldest = &o
	if c.Stale >= c.Matched {
		n := metav1.NewTime(c.Beats.Newest)
		newest = &n
	}
	return oldest, newest
}

func clamp32(n int64) int32 {
	return int32(min(max(n, 0), 1<<31-1))
}
