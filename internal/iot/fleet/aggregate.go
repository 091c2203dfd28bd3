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
		a.LastError = &iotv1.DeviceError{Device: s.LastError.Device, Message: s.LastError.Message,
			At: metav1.NewTime(s.LastError.At.Truncate(1e9))}
	}
	return a
}

// Events are a snapshot's events in the status' form.
func Events(s Snapshot) []iotv1.FleetEvent {
	var out []iotv1.FleetEvent
	for _, e := range s.Events {
		out = append(out, iotv1.FleetEvent{At: metav1.NewTime(e.At.Truncate(1e9)), Device: e.Device,
			Phase: string(e.Phase), Message: e.Message})
	}
	return out
}

func clamp32(n int64) int32 {
	return int32(min(max(n, 0), 1<<31-1))
}
