package fleet

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkIndexStale folds a fleet of N devices into the index (three Deployments' selectors over four
// zones), lets every device's heartbeat lapse, each at another minute (the worst case for the heartbeat
// times the index keeps per selection: as many distinct minutes as devices), then brings half of them
// back. It reports the heap the index keeps afterwards, per device: what the index costs per device.
func BenchmarkIndexStale(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			var x *Index
			var before, after runtime.MemStats
			for range b.N {
				runtime.GC()
				runtime.ReadMemStats(&before)
				x = &Index{}
				for i, ls := range []metav1.LabelSelector{
					{MatchLabels: map[string]string{"zone": "a"}},
					{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "c"}}}},
					{},
				} {
					sel, err := metav1.LabelSelectorAsSelector(&ls)
					if err != nil {
						b.Fatal(err)
					}
					x.Select(DeploymentKey{Namespace: "ns", Name: fmt.Sprint("d", i)}, sel.String(), sel)
				}
				x.Reset()
				x.SyncedDevices()
				x.SyncedHeartbeats()
				var devRev, beatRev uint64
				start := time.Unix(1_800_000_000, 0)
				lapsed := make([]*DeviceLabels, n)
				for i := range n {
					id := fmt.Sprint("dev-", i)
					d := DeviceInfo{Version: ContractVersion, ID: id, Labels: map[string]string{"zone": string(rune('a' + i%4))}}
					devRev++
					if _, err := x.ObserveDevice(Change{Revision: devRev, Key: id, Value: Encode(d)}); err != nil {
						b.Fatal(err)
					}
					lapsed[i] = benchLapse(d.Selection(), start.Add(time.Duration(i)*time.Minute))
					beatRev++
					h := Heartbeat{Version: ContractVersion, At: start, Lapsed: lapsed[i]}
					if _, err := x.ObserveHeartbeat(Change{Revision: beatRev, Key: id, Value: Encode(h)}); err != nil {
						b.Fatal(err)
					}
				}
				for i := 0; i < n; i += 2 {
					beatRev++
					h := Heartbeat{Version: ContractVersion, At: start, Replaced: lapsed[i]}
					if _, err := x.ObserveHeartbeat(Change{Revision: beatRev, Key: fmt.Sprint("dev-", i), Value: Encode(h)}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
			}
			counts, ok := x.Select(DeploymentKey{Namespace: "ns", Name: "d2"}, "", nil)
			if !ok || counts.Matched != int64(n) || counts.Stale != int64(n/2) {
				b.Fatalf("every-device selection: %+v (ok %v), want %d matched, %d stale", counts, ok, n, n/2)
			}
			retained := float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
			b.ReportMetric(retained, "retained-heap-bytes")
			b.ReportMetric(retained/float64(n), "heap-bytes/device")
		})
	}
}

// benchLapse is the lapsed record's labels of a device whose last heartbeat was at.
func benchLapse(l *DeviceLabels, at time.Time) *DeviceLabels {
	l.LastBeat = &at
	return l
}
