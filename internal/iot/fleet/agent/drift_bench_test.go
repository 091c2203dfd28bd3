package agent

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// memRuntime answers Observe from memory: every container runs with its desired spec unless the
// benchmark removed it behind the agent's back, and Apply brings it back. Its names are computed once,
// so a look costs the agent's comparison and one slice per deployment, not the runtime's work (podman
// runs one `podman container inspect` per container, milliseconds each, which this leaves out).
type memRuntime struct {
	mu      sync.Mutex
	names   map[fleet.DeploymentKey][]string
	gone    map[fleet.DeploymentKey]bool
	applies int
}

func (r *memRuntime) Apply(_ context.Context, d fleet.DeploymentKey, _ iotv1.Score) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applies++
	delete(r.gone, d)
	return nil
}

func (r *memRuntime) Remove(_ context.Context, d fleet.DeploymentKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, d)
	return nil
}

func (r *memRuntime) Observe(_ context.Context, d fleet.DeploymentKey, _ iotv1.Score) ([]ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := r.names[d]
	out := make([]ContainerStatus, len(names))
	for i, n := range names {
		out[i] = ContainerStatus{Container: n}
		if !r.gone[d] {
			out[i].Present, out[i].Current, out[i].Running = true, true, true
		}
	}
	return out, nil
}

func (r *memRuntime) takeDown(d fleet.DeploymentKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone[d] = true
}

func (r *memRuntime) appliesSoFar() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applies
}

// benchStore starts an in-process NATS server with JetStream on 127.0.0.1 and opens the fleet's buckets
// on it; a repair writes its two transitions there. (fleettest imports this package, so this test cannot
// use its server.)
func benchStore(b *testing.B) *store.Store {
	b.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: b.TempDir(), NoSigs: true, NoLog: true}
	srv, err := server.NewServer(opts)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Start()
	b.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		b.Fatal("NATS server not ready in 10s")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(context.Background(), js, 0)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkDriftTick measures one drift-repair tick of the agent (lookAll: what repairDrift runs every
// ReconcileInterval and on each runtime event) on a device with 10, 100 and 1000 desired containers,
// one service per deployment. "steady": every container runs, nothing is written. "repair-one": before
// each tick one container is removed behind the agent's back, so the tick reports Pending, applies,
// observes again and reports Running (two compare-and-swap writes to a local NATS server).
func BenchmarkDriftTick(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a NATS server")
	}
	st := benchStore(b)
	for _, n := range []int{10, 100, 1000} {
		for _, repair := range []bool{false, true} {
			name := fmt.Sprintf("containers=%d/steady", n)
			if repair {
				name = fmt.Sprintf("containers=%d/repair-one", n)
			}
			b.Run(name, func(b *testing.B) { benchDriftTick(b, st, n, repair) })
		}
	}
}

func benchDriftTick(b *testing.B, st *store.Store, n int, repair bool) {
	ctx := context.Background()
	// A device of its own per case, so the repaired deployment's records start empty.
	device := fmt.Sprintf("bench-%d-%v-%d", n, repair, os.Getpid())
	rt := &memRuntime{names: map[fleet.DeploymentKey][]string{}, gone: map[fleet.DeploymentKey]bool{}}
	a := &Agent{Device: fleet.DeviceInfo{ID: device}, Store: st, Runtime: rt, Log: logr.Discard(),
		desired: map[fleet.DeploymentKey]*drift{}}
	var first fleet.DeploymentKey
	for i := range n {
		d := fleet.DeploymentKey{Namespace: "bench", Name: fmt.Sprintf("app-%04d", i)}
		if i == 0 {
			first = d
		}
		svc := iotv1.Service{Name: "app", Image: "registry.example/app:1"}
		sc := iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{svc}}}
		rt.names[d] = []string{ContainerName(d, svc.Name)}
		a.desired[d] = &drift{gen: 1, score: sc, phase: fleet.PhaseRunning}
	}
	if repair {
		// The store writes a report only for the generation desired: publish the repaired one's.
		if _, err := st.Publish(ctx, device, first, fleet.Desired{Version: fleet.ContractVersion, Generation: 1,
			Score: a.desired[first].score}); err != nil {
			b.Fatal(err)
		}
	}
	// The first look records each container's restart count; the ticks measured are the ones after it.
	a.lookAll(ctx, rt)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if repair {
			rt.takeDown(first)
		}
		a.lookAll(ctx, rt)
	}
	b.StopTimer()
	want := 0
	if repair {
		want = b.N
	}
	if got := rt.appliesSoFar(); got != want {
		b.Fatalf("%d repairs in %d ticks, want %d", got, b.N, want)
	}
	if repair {
		s, err := st.StateOf(ctx, first, device)
		if err != nil {
			b.Fatal(err)
		}
		if s == nil || s.Phase != fleet.PhaseRunning {
			b.Fatalf("after the repairs the state is %+v, want Running", s)
		}
	}
	if !repair {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/container")
	}
}
