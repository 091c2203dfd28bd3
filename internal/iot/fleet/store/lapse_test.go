package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// TestSecondLapseIsCounted: a device lapses, comes back, and lapses again. The lapsed record of the first
// lapse never expires (Nats-TTL: never); the heartbeat that replaces it must erase it from the key's
// history, or the heartbeats after it expire without a marker when the device stops again, the second
// lapse is never counted stale, and the device's next return subtracts a stale count never added.
func TestSecondLapseIsCounted(t *testing.T) {
	// A server of its own, enforcing the shipped permissions: the device beats with its own credentials
	// (which must allow the roll-up on its own key), and the short TTL applies to no other test.
	srv := fleettest.StartAuthorized(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, st, err := srv.ConnectOperator(ctx, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const id = "dev-lapse"
	dnc, dev, err := srv.ConnectDevice(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer dnc.Close()

	d := fleet.DeploymentKey{Namespace: "t4", Name: "web"}
	sel := labels.SelectorFromSet(labels.Set{"site": "a"})
	index := &fleet.Index{}
	index.Select(d, sel.String(), sel)
	go func() { _ = st.FoldIndex(ctx, index, nil) }()
	counts := func() fleet.SelectionCounts {
		c, _ := index.Select(d, sel.String(), sel)
		return c
	}

	if err := dev.RegisterDevice(ctx, fleet.DeviceInfo{ID: id, Labels: map[string]string{"site": "a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the device counted", func() bool { c := counts(); return c.Matched == 1 && c.Stale == 0 })
	var lapsed *fleet.Heartbeat
	lapsedRecord := func() bool {
		e, err := st.Heartbeats.Get(ctx, fleet.DeviceKey(id))
		if err != nil {
			return false
		}
		h, err := fleet.DecodeHeartbeat(e.Value())
		lapsed = h
		return err == nil && h.Lapsed != nil
	}
	// checkLastBeat: the lapsed record dates the device's last heartbeat (written at beat) as the
	// server's expiry implies it, and the index gives it, to the minute, as the selection's oldest and
	// newest.
	checkLastBeat := func(what string, beat time.Time) {
		t.Helper()
		lb := lapsed.Lapsed.LastBeat
		if lb == nil || lb.Before(beat.Add(-time.Second)) || lb.After(beat.Add(2*time.Second)) {
			t.Errorf("%s: the lapsed record's lastBeat is %v, the heartbeat was written at %v", what, lb, beat)
			return
		}
		eventually(t, what+": the index's heartbeat times", func() bool {
			b := counts().Beats
			return b.Known && b.Oldest.Equal(lb.Truncate(fleet.BeatStep)) && b.Newest.Equal(lb.Truncate(fleet.BeatStep))
		})
	}
	var beat time.Time
	for lapse := 1; lapse <= 2; lapse++ {
		// The device beats, then stops: its key lapses, the operator records the lapse and counts it.
		beat = time.Now()
		if _, err := dev.Heartbeat(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the device counted stale", func() bool { return counts().Stale == 1 })
		eventually(t, "the lapsed record written", lapsedRecord)
		checkLastBeat(fmt.Sprint("lapse ", lapse), beat)
		// It comes back: its heartbeat names the lapse it replaces, and counts it out of stale.
		if _, err := dev.Heartbeat(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the device counted back", func() bool { return counts().Stale == 0 })
		if b := counts().Beats; !b.Known || !b.Oldest.IsZero() {
			t.Errorf("lapse %d: the device came back, the index still gives heartbeat times %+v", lapse, b)
		}
		// The returning heartbeat left no older message behind it (the lapsed record least of all).
		if n := history(ctx, t, st.Heartbeats, fleet.DeviceKey(id)); n != 1 {
			t.Errorf("lapse %d: the key keeps %d messages after the device came back, want 1", lapse, n)
		}
	}
	// The server honours the compare-and-swap of a roll-up: a stale revision is refused and erases
	// nothing; the current one (positive control) is taken.
	js, err := jetstream.New(dnc)
	if err != nil {
		t.Fatal(err)
	}
	e, err := dev.Heartbeats.Get(ctx, fleet.DeviceKey(id))
	if err != nil {
		t.Fatal(err)
	}
	rollUp := func(rev uint64) error {
		msg := nats.NewMsg("$KV." + fleet.BucketHeartbeats + "." + fleet.DeviceKey(id))
		msg.Data = fleet.Encode(fleet.Heartbeat{Version: fleet.ContractVersion, At: time.Now().UTC()})
		msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(rev))
		_, err := js.PublishMsg(ctx, msg)
		return err
	}
	var apiErr *jetstream.APIError
	if err := rollUp(e.Revision() - 1); !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Errorf("a roll-up over a stale revision: %v, want wrong last sequence (10071)", err)
	}
	beat = time.Now()
	if err := rollUp(e.Revision()); err != nil {
		t.Errorf("a roll-up over the current revision: %v", err)
	}
	// The device stops for good: a state that lasts, to compare with a recount.
	eventually(t, "the third lapse counted", func() bool { return counts().Stale == 1 })
	eventually(t, "the third lapsed record written", lapsedRecord)
	checkLastBeat("lapse 3", beat)
	// Relabelled while silent, within the selection: the operator's rewritten lapsed record keeps the
	// device's last heartbeat, and the index its time.
	before := *lapsed.Lapsed.LastBeat
	if err := dev.RegisterDevice(ctx, fleet.DeviceInfo{ID: id, Labels: map[string]string{"site": "a", "rack": "7"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the lapsed record relabelled", func() bool { return lapsedRecord() && lapsed.Replaced != nil })
	if lb := lapsed.Lapsed.LastBeat; lb == nil || !lb.Equal(before) {
		t.Errorf("the relabelled lapsed record's lastBeat is %v, want %v", lb, before)
	}
	checkLastBeat("relabelled", beat)

	if n := index.Recounts(); n != 0 {
		t.Errorf("the index recounted %d times: a lapse or a return was folded wrong", n)
	}

	// The counts equal a recount of both buckets.
	fresh := &fleet.Index{}
	fresh.Select(d, sel.String(), sel)
	go func() { _ = st.FoldIndex(ctx, fresh, nil) }()
	var recount fleet.SelectionCounts
	eventually(t, "the recount done", func() bool {
		c, ok := fresh.Select(d, sel.String(), sel)
		recount = c
		return ok
	})
	if got := counts(); got.Matched != recount.Matched || got.Stale != recount.Stale || got.Beats != recount.Beats {
		t.Errorf("index matched %d stale %d beats %+v, a recount matched %d stale %d beats %+v", got.Matched, got.Stale, got.Beats, recount.Matched, recount.Stale, recount.Beats)
	}
}

// history is how many messages a key has in the stream (deletions included).
func history(ctx context.Context, t *testing.T, kv jetstream.KeyValue, key string) int {
	t.Helper()
	entries, err := kv.History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}
