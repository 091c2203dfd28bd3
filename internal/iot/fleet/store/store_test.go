package store_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// One NATS server for the package, stopped when the tests end.
var natsURL string

func TestMain(m *testing.M) {
	srv, err := fleettest.StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	natsURL = srv.ClientURL()
	code := m.Run()
	srv.Shutdown()
	os.Exit(code)
}

func score(image string) iotv1.Score {
	return iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{Name: "app", Image: image}}}}
}

// eventually polls cond until it holds or 20 seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// connect connects the operator's store to the package's server; the connection closes and the context
// is cancelled when t ends.
func connect(t *testing.T) (context.Context, *store.Store) {
	t.Helper()
	nc, st, err := fleettest.Connect(t.Context(), natsURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return t.Context(), st
}

func TestFleetAgainstNATS(t *testing.T) {
	ctx, st := connect(t)
	counters := &fleet.Counters{}
	synced := make(chan struct{}, 16)
	go func() { _ = st.Fold(ctx, counters, func() { synced <- struct{}{} }) }()
	<-synced

	d := fleet.DeploymentKey{Namespace: "t1", Name: "web"}
	var devices []*fleettest.Device
	for i := range 5 {
		devices = append(devices, fleettest.StartDevice(ctx, st, fmt.Sprintf("dev-%d", i), map[string]string{"site": "a"}, nil))
	}
	defer func() {
		for _, dev := range devices {
			dev.Stop()
		}
	}()
	var registered int
	eventually(t, "every device registered", func() bool {
		registered = 0
		_ = st.EachDevice(ctx, func(*fleet.DeviceInfo) { registered++ })
		return registered == 5
	})
	running := func(gen int64) int64 { return counters.Snapshot(d).ByGeneration[gen].Running }

	for _, dev := range devices {
		if _, err := st.Publish(ctx, dev.Info.ID, d, fleet.Desired{Generation: 1, Score: score("img:1")}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "5 devices running generation 1", func() bool { return running(1) == 5 })

	t.Run("publishing the same desired state again writes nothing", func(t *testing.T) {
		wrote, err := st.Publish(ctx, "dev-0", d, fleet.Desired{Generation: 1, Score: score("img:1")})
		if err != nil || wrote {
			t.Errorf("Publish of an unchanged desired state wrote=%v err=%v", wrote, err)
		}
	})

	t.Run("restarted agents neither lose nor double-count", func(t *testing.T) {
		before := lastSeq(ctx, t, st)
		applied := map[string]int{}
		for _, dev := range devices[:2] {
			applied[dev.Info.ID] = dev.Runtime.Applies()
			dev.Stop()
			dev.Start(ctx)
		}
		// Each restarted agent re-applies its desired state (idempotently) and finds nothing to report.
		probe := fleettest.StartDevice(ctx, st, "probe", nil, nil)
		defer probe.Stop()
		if _, err := st.Publish(ctx, "probe", d, fleet.Desired{Generation: 1, Score: score("img:1")}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the probe device running", func() bool { return running(1) == 6 })
		for _, dev := range devices[:2] {
			eventually(t, "the restarted agent re-applied", func() bool { return dev.Runtime.Applies() > applied[dev.Info.ID] })
		}
		// The probe wrote Pending and Running; the restarted agents nothing.
		if got := lastSeq(ctx, t, st) - before; got != 2 {
			t.Errorf("%d writes to the state bucket, want 2 (the probe's Pending and Running)", got)
		}
		if err := st.Withdraw(ctx, "probe", d); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the withdrawn probe counted out", func() bool { return running(1) == 5 })
	})

	t.Run("a failing device shows in the counts and as the last error", func(t *testing.T) {
		bad := &fleettest.FakeRuntime{}
		bad.SetFail("img:1", "pull: manifest unknown")
		dev := fleettest.StartDevice(ctx, st, "bad", nil, bad)
		defer dev.Stop()
		if _, err := st.Publish(ctx, "bad", d, fleet.Desired{Generation: 1, Score: score("img:1")}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "one failed device", func() bool { return counters.Snapshot(d).ByGeneration[1].Failed == 1 })
		s := counters.Snapshot(d)
		if s.LastError == nil || s.LastError.Device != "bad" || s.LastError.Message != "service app: pull: manifest unknown" {
			t.Errorf("LastError = %+v", s.LastError)
		}
		if err := st.Withdraw(ctx, "bad", d); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the failed device counted out", func() bool { return counters.Snapshot(d).ByGeneration[1].Failed == 0 })
	})

	t.Run("an upgrade moves devices to the new generation", func(t *testing.T) {
		for _, dev := range devices {
			if _, err := st.Publish(ctx, dev.Info.ID, d, fleet.Desired{Generation: 2, Score: score("img:2")}); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, "5 devices running generation 2", func() bool { return running(2) == 5 && running(1) == 0 })
	})

	t.Run("an operator restart recounts the same", func(t *testing.T) {
		fresh := &fleet.Counters{}
		ctx2, cancel2 := context.WithCancel(ctx)
		defer cancel2()
		done := make(chan struct{}, 1)
		go func() { _ = st.Fold(ctx2, fresh, func() { done <- struct{}{} }) }()
		<-done
		if got, want := fresh.Snapshot(d).ByGeneration, counters.Snapshot(d).ByGeneration; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("recount %v, live counters %v", got, want)
		}
	})

	t.Run("purging a deployment removes its records from every device", func(t *testing.T) {
		counters.Forget(d)
		n, err := st.PurgeDeployment(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if n < 10 {
			t.Errorf("purged %d keys, want at least 10 (5 desired, 5 state)", n)
		}
		for _, dev := range devices {
			eventually(t, "the containers removed", func() bool { _, ok := dev.Runtime.Running(d); return !ok })
		}
		left := 0
		if err := st.EachDesired(ctx, d, func(string, *fleet.Desired) { left++ }); err != nil || left != 0 {
			t.Errorf("%d desired states left (%v)", left, err)
		}
	})
}

// lastSeq is the state bucket's last revision: it grows by one per write.
func lastSeq(ctx context.Context, t *testing.T, st *store.Store) uint64 {
	t.Helper()
	s, err := st.State.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
}

// TestCountersSurviveANATSRestart: the server restarts (same port, same storage) under a running fleet;
// agents and the operator's fold reconnect, and the counters stay equal to a recount.
func TestCountersSurviveANATSRestart(t *testing.T) {
	f := fleettest.StartConnected(t)
	ctx, srv, st := f.Ctx, f.Server, f.Store
	counters := &fleet.Counters{}
	go func() { _ = st.Fold(ctx, counters, nil) }()
	d := fleet.DeploymentKey{Namespace: "t2", Name: "web"}
	devices := fleettest.StartFleet(ctx, st, "r", "x", 3)
	defer func() {
		for _, dev := range devices {
			dev.Stop()
		}
	}()
	publish := func(gen int64, image string) {
		t.Helper()
		for _, dev := range devices {
			for {
				_, err := st.Publish(ctx, dev.Info.ID, d, fleet.Desired{Generation: gen, Score: score(image)})
				if err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond) // the client is reconnecting
			}
		}
	}
	publish(1, "img:1")
	eventually(t, "3 devices running generation 1", func() bool { return counters.Snapshot(d).ByGeneration[1].Running == 3 })

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	publish(2, "img:2")
	t.Logf("published after %s", time.Since(t0))
	eventually(t, "3 devices running generation 2 after the restart", func() bool {
		s := counters.Snapshot(d)
		return s.ByGeneration[2].Running == 3 && len(s.ByGeneration) == 1
	})
	t.Logf("converged after %s", time.Since(t0))
	fresh := &fleet.Counters{}
	synced := make(chan struct{}, 1)
	ctx2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	go func() { _ = st.Fold(ctx2, fresh, func() { synced <- struct{}{} }) }()
	<-synced
	if got, want := fmt.Sprint(fresh.Snapshot(d).ByGeneration), fmt.Sprint(counters.Snapshot(d).ByGeneration); got != want {
		t.Errorf("after the restart: recount %s, live counters %s", got, want)
	}
}

// TestBadInputAgainstNATS: the buckets refuse records beyond their MaxValueSize; a record the contract
// refuses (junk, a device record under another device's key) reaches the fold's hooks with its reason
// and the device and Deployment its key names, and moves no count; an honest device's count stays.
func TestBadInputAgainstNATS(t *testing.T) {
	ctx, st := connect(t)

	t.Run("the buckets refuse records beyond their bounds", func(t *testing.T) {
		for _, b := range []struct {
			kv    jetstream.KeyValue
			limit int
		}{{st.Devices, fleet.MaxDeviceRecordBytes}, {st.State, fleet.MaxStateRecordBytes}, {st.Heartbeats, fleet.MaxHeartbeatRecordBytes}} {
			if _, err := b.kv.Put(ctx, "t3.big.dev-big", make([]byte, b.limit+1)); err == nil {
				t.Errorf("%s took a record of %d bytes", b.kv.Bucket(), b.limit+1)
			}
			if _, err := b.kv.Put(ctx, "t3.big.dev-big", make([]byte, b.limit)); err != nil {
				t.Errorf("%s refused a record of %d bytes (its bound): %v", b.kv.Bucket(), b.limit, err)
			}
		}
	})

	var (
		mu       sync.Mutex
		rejected []*fleet.Rejection
	)
	st.Hooks.Rejected = func(r *fleet.Rejection) {
		mu.Lock()
		defer mu.Unlock()
		rejected = append(rejected, r)
	}
	found := func(reason, device string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rejected {
			if r.Reason == reason && r.Device == device {
				return true
			}
		}
		return false
	}
	counters := &fleet.Counters{}
	synced := make(chan struct{}, 16)
	go func() { _ = st.Fold(ctx, counters, func() { synced <- struct{}{} }) }()
	<-synced
	index := &fleet.Index{}
	go func() { _ = st.FoldIndex(ctx, index, nil) }()

	d := fleet.DeploymentKey{Namespace: "t3", Name: "web"}
	for _, dev := range []string{"dev-ok", "dev-evil"} { // both targeted: their records are refused for what they hold
		if _, err := st.Publish(ctx, dev, d, fleet.Desired{Generation: 1, Score: score("img:1")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Transition(ctx, d, "dev-ok", 1, fleet.PhaseRunning, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the honest device counted", func() bool { return counters.Snapshot(d).ByGeneration[1].Running == 1 })

	if _, err := st.State.Put(ctx, fleet.StateKey(d, "dev-evil"), []byte("\x00junk")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the junk state record refused", func() bool { return found(fleet.ReasonDecode, "dev-evil") })
	mu.Lock()
	for _, r := range rejected {
		if r.Device == "dev-evil" && r.Deployment != d {
			t.Errorf("the refusal names deployment %s, want %s", r.Deployment, d)
		}
	}
	mu.Unlock()

	foreign := fleet.DeviceInfo{Version: fleet.ContractVersion, ID: "dev-ok", Labels: map[string]string{"site": "a"}}
	if _, err := st.Devices.Put(ctx, "dev-evil", fleet.Encode(foreign)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the foreign device record refused", func() bool { return found(fleet.ReasonForeign, "dev-evil") })

	// Positive control: the same record under its own key is taken.
	if err := st.RegisterDevice(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	// The junk record landed on a key of a counted deployment: the counters cannot know whether that key
	// was counted, so they recount (at once, the first time) and are empty while they do. Once the
	// recount has passed they hold the honest device alone.
	honest := fmt.Sprint(map[int64]fleet.PhaseCounts{1: {Running: 1}})
	eventually(t, "the counts after the bad input are the honest device alone", func() bool {
		return fmt.Sprint(counters.Snapshot(d).ByGeneration) == honest
	})
	if found(fleet.ReasonForeign, "dev-ok") {
		t.Error("a device's own record was refused")
	}
}

// TestUntargetedState: a device writing state keys for Deployments that do not target it (one another
// namespace's Deployment targets only other devices, and a thousand Deployment names that exist
// nowhere) moves no count, is refused as untargeted, and leaves the counters' memory as it was; a
// Failed record there leaves the victim's counts (and so its rollout's failure budget) alone. The
// control: the same device's record for the Deployment that does target it is counted. Once withdrawn,
// only a Removed record of it is folded.
func TestUntargetedState(t *testing.T) {
	ctx, st := connect(t)
	var (
		mu         sync.Mutex
		untargeted = map[string]int{}
	)
	st.Hooks.Rejected = func(r *fleet.Rejection) {
		mu.Lock()
		defer mu.Unlock()
		if r.Reason == fleet.ReasonUntargeted {
			untargeted[r.Device]++
		}
	}
	refused := func(device string) int {
		mu.Lock()
		defer mu.Unlock()
		return untargeted[device]
	}
	counters := &fleet.Counters{}
	synced := make(chan struct{}, 16)
	go func() { _ = st.Fold(ctx, counters, func() { synced <- struct{}{} }) }()
	<-synced

	own := fleet.DeploymentKey{Namespace: "team-a", Name: "web"}
	victim := fleet.DeploymentKey{Namespace: "team-b", Name: "web"}
	desired := fleet.Desired{Generation: 1, Score: score("img:1")}
	for _, p := range []struct {
		device string
		d      fleet.DeploymentKey
	}{{"evil", own}, {"b-0", victim}, {"b-1", victim}} {
		if _, err := st.Publish(ctx, p.device, p.d, desired); err != nil {
			t.Fatal(err)
		}
	}
	for _, dev := range []string{"b-0", "b-1"} {
		if _, err := st.Report(ctx, victim, dev, 1, fleet.PhaseRunning, ""); err != nil {
			t.Fatal(err)
		}
	}
	running := func(n int64) string { return fmt.Sprint(map[int64]fleet.PhaseCounts{1: {Running: n}}) }
	eventually(t, "the victim's devices counted", func() bool { return fmt.Sprint(counters.Snapshot(victim).ByGeneration) == running(2) })
	entries := counters.Entries()

	// The device writes as its permissions let it: any state key naming itself.
	failed := fleet.Encode(fleet.State{Version: fleet.ContractVersion, Generation: 1, Phase: fleet.PhaseFailed, Message: "forged"})
	if _, err := st.State.Put(ctx, fleet.StateKey(victim, "evil"), failed); err != nil {
		t.Fatal(err)
	}
	const forged = 1000
	for i := range forged {
		if _, err := st.State.Put(ctx, fleet.StateKey(fleet.DeploymentKey{Namespace: "nowhere", Name: fmt.Sprintf("d%d", i)}, "evil"), failed); err != nil {
			t.Fatal(err)
		}
	}
	// The control, written last: the fold is in order, so once it is counted every forged key was read.
	if _, err := st.Report(ctx, own, "evil", 1, fleet.PhaseRunning, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the control: evil's own record counted", func() bool { return fmt.Sprint(counters.Snapshot(own).ByGeneration) == running(1) })
	if got := refused("evil"); got != forged+1 {
		t.Errorf("%d of evil's records refused as untargeted, want %d", got, forged+1)
	}
	if got := fmt.Sprint(counters.Snapshot(victim).ByGeneration); got != running(2) {
		t.Errorf("the victim's counts: %s, want %s", got, running(2))
	}
	if got := counters.Entries(); got != entries+1 { // the control's generation of its own Deployment
		t.Errorf("the counters hold %d entries, %d before the forged keys (want one more: the control)", got, entries)
	}
	if counters.Recounts() != 0 {
		t.Errorf("%d recounts: a refused untargeted record must not break the fold's revision chain", counters.Recounts())
	}

	// Withdrawn: a counted phase is refused, the operator's Removed record is folded.
	if err := st.Withdraw(ctx, "evil", own); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the withdrawal folded", func() bool { return len(counters.Snapshot(own).ByGeneration) == 0 })
	before := refused("evil")
	if _, err := st.State.Put(ctx, fleet.StateKey(own, "evil"), failed); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a record after the withdrawal refused", func() bool { return refused("evil") == before+1 })
	if got := len(counters.Snapshot(own).ByGeneration); got != 0 {
		t.Errorf("a withdrawn device's Failed record counted: %v", counters.Snapshot(own).ByGeneration)
	}
}
