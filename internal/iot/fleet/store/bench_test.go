package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// BenchmarkFleetNATS measures the counters against a real NATS server: N simulated devices (writers of
// state transitions with compare-and-swap, as the agent's Report does, 32 at a time) each go Pending then
// Running; the operator's fold follows the state bucket. It reports how fast transitions are written and
// folded, how long the fold lags behind the last write, how long one naive recount of the whole bucket
// takes (what recounting every tick would cost each tick), the JetStream writes per transition, and the
// counter entries kept, which do not grow with N (BenchmarkCounters in internal/iot/fleet measures their heap;
// here the NATS server shares the process, so the heap is the server's).
func BenchmarkFleetNATS(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			for range b.N {
				benchFleet(b, n)
			}
		})
	}
}

func benchFleet(b *testing.B, n int) {
	b.StopTimer()
	f := fleettest.StartConnected(b)
	ctx, st := f.Ctx, f.Store
	d := fleet.DeploymentKey{Namespace: "bench", Name: "web"}

	counters := &fleet.Counters{}
	synced := make(chan struct{}, 4)
	go func() { _ = st.Fold(ctx, counters, func() { synced <- struct{}{} }) }()
	<-synced

	// The devices are targeted (the fold refuses state records of a Deployment without a desired
	// state for the device): published before the clock starts.
	var pub sync.WaitGroup
	devs := make(chan int)
	for range 32 {
		pub.Add(1)
		go func() {
			defer pub.Done()
			for i := range devs {
				if _, err := st.Publish(ctx, fmt.Sprint("dev-", i), d, fleet.Desired{Generation: 1}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	for i := range n {
		devs <- i
	}
	close(devs)
	pub.Wait()

	b.StartTimer()
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				dev := fmt.Sprint("dev-", i)
				for _, p := range []fleet.Phase{fleet.PhasePending, fleet.PhaseRunning} {
					if _, err := st.Transition(ctx, d, dev, 1, p, ""); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	written := time.Since(start)
	for deadline := time.Now().Add(time.Minute); counters.Snapshot(d).ByGeneration[1].Running != int64(n); {
		if time.Now().After(deadline) {
			b.Fatalf("the fold never reached %d running: %+v (recounts %d)", n, counters.Snapshot(d).ByGeneration, counters.Recounts())
		}
		time.Sleep(time.Millisecond)
	}
	folded := time.Since(start)
	b.StopTimer()
	if c := counters.Snapshot(d).ByGeneration[1]; c != (fleet.PhaseCounts{Running: int64(n)}) {
		b.Fatalf("counts %+v, want %d running", c, n)
	}

	recountStart := time.Now()
	fresh := &fleet.Counters{}
	ctx2, cancel2 := context.WithCancel(ctx)
	go func() { _ = st.Fold(ctx2, fresh, func() { synced <- struct{}{} }) }()
	<-synced
	recount := time.Since(recountStart)
	cancel2()

	seq := lastSeq(ctx, &testing.T{}, st)
	transitions := float64(2 * n)
	b.ReportMetric(transitions/written.Seconds(), "transitions/s")
	b.ReportMetric(float64((folded - written).Milliseconds()), "fold-lag-ms")
	b.ReportMetric(float64(recount.Milliseconds()), "naive-recount-ms")
	b.ReportMetric(float64(seq)/transitions, "js-writes/transition")
	b.ReportMetric(float64(counters.Entries()), "counters")
	b.ReportMetric(float64(counters.Recounts()), "recounts")
}
