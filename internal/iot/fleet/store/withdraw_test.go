package store_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// TestWithdrawalAheadOfTheFold is issue 34's last bug, made deterministic: a fold that lags behind the
// bucket (as after a server is lost or a leader steps down) reads a device's records after the operator
// has already withdrawn the device. The records were written while the device was targeted (the agent's
// Report checks that), and the operator's Removed record names the last of them as its previous phase:
// they are folded, so that the Removed record takes out of the counts exactly what the device's chain
// put in. Refused instead (the fold used to judge them by the desired state as it is when it reads
// them), the device stayed counted in its old generation and the Removed record took another device out
// of the new one, for good. The lag is made by a hook that holds the fold on a forged record while the
// device moves and is withdrawn. The control: a record the device writes after its withdrawal folded is
// refused, as TestUntargetedState checks.
func TestWithdrawalAheadOfTheFold(t *testing.T) {
	ctx, st := connect(t)
	d := fleet.DeploymentKey{Namespace: "lag", Name: "web"}
	var (
		mu      sync.Mutex
		block   = make(chan struct{})
		blocked = make(chan struct{})
		once    sync.Once
		refused = map[string]int{}
	)
	st.Hooks.Rejected = func(r *fleet.Rejection) {
		if r.Device == "forger" {
			once.Do(func() {
				close(blocked)
				<-block // the fold waits here: every record written meanwhile reaches it late
			})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		refused[r.Device]++
	}
	counters := &fleet.Counters{}
	synced := make(chan struct{}, 16)
	go func() { _ = st.Fold(ctx, counters, func() { synced <- struct{}{} }) }()
	<-synced

	for _, dev := range []string{"stayer", "leaver"} {
		if _, err := st.Publish(ctx, dev, d, fleet.Desired{Generation: 1, Score: score("img:1")}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Report(ctx, d, dev, 1, fleet.PhaseRunning, ""); err != nil {
			t.Fatal(err)
		}
	}
	// The stayer is on generation 2 already.
	if _, err := st.Publish(ctx, "stayer", d, fleet.Desired{Generation: 2, Score: score("img:2")}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []fleet.Phase{fleet.PhasePending, fleet.PhaseRunning} {
		if _, err := st.Report(ctx, d, "stayer", 2, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	counts := func(m map[int64]fleet.PhaseCounts) string { return fmt.Sprint(m) }
	eventually(t, "both devices counted", func() bool {
		return counts(counters.Snapshot(d).ByGeneration) == counts(map[int64]fleet.PhaseCounts{1: {Running: 1}, 2: {Running: 1}})
	})

	// The fold stops on a forged record; meanwhile the leaver moves to generation 2 and is withdrawn.
	forged := fleet.Encode(fleet.State{Version: fleet.ContractVersion, Generation: 1, Phase: fleet.PhaseFailed})
	if _, err := st.State.Put(ctx, fleet.StateKey(fleet.DeploymentKey{Namespace: "nowhere", Name: "x"}, "forger"), forged); err != nil {
		t.Fatal(err)
	}
	<-blocked
	if _, err := st.Publish(ctx, "leaver", d, fleet.Desired{Generation: 2, Score: score("img:2")}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []fleet.Phase{fleet.PhasePending, fleet.PhaseRunning} {
		if ok, err := st.Report(ctx, d, "leaver", 2, p, ""); err != nil || !ok {
			t.Fatalf("report %s: wrote %v, %v", p, ok, err)
		}
	}
	if err := st.Withdraw(ctx, "leaver", d); err != nil {
		t.Fatal(err)
	}
	// A control written last, on another deployment: once it is counted, the fold has read the rest.
	control := fleet.DeploymentKey{Namespace: "lag", Name: "control"}
	if _, err := st.Publish(ctx, "stayer", control, fleet.Desired{Generation: 1, Score: score("img:1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Report(ctx, control, "stayer", 1, fleet.PhaseRunning, ""); err != nil {
		t.Fatal(err)
	}
	close(block)
	eventually(t, "the control counted", func() bool { return counters.Snapshot(control).ByGeneration[1].Running == 1 })

	want := counts(map[int64]fleet.PhaseCounts{2: {Running: 1}})
	if got := counts(counters.Snapshot(d).ByGeneration); got != want {
		t.Errorf("after the leaver's withdrawal the live counters say %s, want %s (the stayer alone)", got, want)
	}
	if n := counters.Recounts(); n != 0 {
		t.Errorf("%d recounts: the withdrawn device's records must fold in place", n)
	}
	mu.Lock()
	if refused["leaver"] != 0 || refused["stayer"] != 0 {
		t.Errorf("honest records refused: %v", refused)
	}
	mu.Unlock()

	// The control of the refusal: a record the device writes after its Removed record is refused and
	// moves no count.
	before := counters.Recounts()
	failed := fleet.Encode(fleet.State{Version: fleet.ContractVersion, Generation: 2, Phase: fleet.PhaseFailed, Message: "after"})
	if _, err := st.State.Put(ctx, fleet.StateKey(d, "leaver"), failed); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a record after the withdrawal refused", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return refused["leaver"] == 1
	})
	if got := counts(counters.Snapshot(d).ByGeneration); got != want || counters.Recounts() != before {
		t.Errorf("a withdrawn device's record moved the counts: %s (want %s), %d recounts", got, want, counters.Recounts()-before)
	}

	// Bounded: a device that keeps writing after its withdrawal fills the fold's held records; beyond
	// store.MaxHeldRecords (with the one above, and those of other tests on this server) the fold
	// recounts rather than hold more (the recount holds each key's current record alone), and the
	// counts are the stayer's again.
	recounts := counters.Recounts()
	for i := range store.MaxHeldRecords {
		if _, err := st.State.Put(ctx, fleet.StateKey(d, "leaver"), failed); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	eventually(t, "a recount once the held records are full", func() bool { return counters.Recounts() > recounts })
	eventually(t, "the counts after the recount", func() bool { return counts(counters.Snapshot(d).ByGeneration) == want })
}
