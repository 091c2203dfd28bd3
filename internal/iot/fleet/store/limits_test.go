package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// TestBucketLimits: the server enforces the limits Open gives the buckets. With room for 3 devices, a
// fourth device's record is refused while the three rewrite theirs (the control); the desired bucket
// takes 2 consumers and refuses a third; every bucket has a byte and a message limit.
func TestBucketLimits(t *testing.T) {
	srv := fleettest.StartConnected(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(srv.Conn)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh server's buckets: StartConnected opened them with the defaults; reopen with small limits.
	st, err := store.OpenWithLimits(ctx, js, 0, store.Limits{Devices: 3, DeploymentsPerDevice: 1, Consumers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{fleet.BucketDevices, fleet.BucketDesired, fleet.BucketState, fleet.BucketHeartbeats} {
		s, err := js.Stream(ctx, "KV_"+b)
		if err != nil {
			t.Fatal(err)
		}
		if c := s.CachedInfo().Config; c.MaxBytes <= 0 || c.MaxMsgs <= 0 || c.Discard != jetstream.DiscardNew {
			t.Errorf("bucket %s: max bytes %d, max messages %d, discard %v", b, c.MaxBytes, c.MaxMsgs, c.Discard)
		}
	}
	for i := range 3 {
		if err := st.RegisterDevice(ctx, fleet.DeviceInfo{ID: fmt.Sprintf("d%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RegisterDevice(ctx, fleet.DeviceInfo{ID: "d3"}); err == nil {
		t.Error("a fourth device registered in a bucket for three")
	}
	if err := st.RegisterDevice(ctx, fleet.DeviceInfo{ID: "d0", Labels: map[string]string{"site": "lyon"}}); err != nil {
		t.Errorf("control: a registered device rewrites its record: %v", err)
	}
	var watches []jetstream.KeyWatcher
	defer func() {
		for _, w := range watches {
			_ = w.Stop()
		}
	}()
	for i := range 3 {
		w, err := st.Desired.Watch(ctx, fleet.DesiredDeviceFilter(fmt.Sprintf("d%d", i)))
		switch {
		case i < 2 && err != nil:
			t.Errorf("control: watch %d: %v", i, err)
		case i == 2 && err == nil:
			t.Error("a third consumer of the desired bucket was created, the limit is 2")
		case i == 2 && !errors.Is(err, jetstream.ErrMaximumConsumersLimit):
			t.Logf("the third watch: %v", err)
		}
		if w != nil {
			watches = append(watches, w)
		}
	}
}
