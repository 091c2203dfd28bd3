package fleettest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

var buckets = []string{fleet.BucketDevices, fleet.BucketDesired, fleet.BucketState, fleet.BucketHeartbeats}

// TestClusterBootsFromTheRenderedConfiguration: three nats-server processes started from broker.Render's
// configuration form one JetStream cluster that enforces the fleet's permissions; the operator's store
// opened with Replicas 3 puts every bucket on all three servers (the control: Replicas 1 on one), opened
// again without a count keeps them there, and a
// write survives the SIGKILL of its stream's leader, which the cluster replaces, and the killed server
// catches up once restarted; a step-down moves a stream's leader.
func TestClusterBootsFromTheRenderedConfiguration(t *testing.T) {
	c := fleettest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The control first: the same store opened with one replica keeps each bucket on one server, so the
	// check below can fail. Opening it again with three replicates the buckets that exist (what the
	// operator does when a broker grows from one server to three).
	replicas := func(want int) {
		t.Helper()
		for _, b := range buckets {
			// A bucket that grew from one replica takes a moment to place and catch up its new ones.
			deadline := time.Now().Add(30 * time.Second)
			for {
				si, err := c.StreamInfo(ctx, "KV_"+b)
				if err != nil {
					t.Fatal(err)
				}
				// Every replica current, not only placed: a leader killed while a replica added a moment ago
				// still catches up may leave that replica to lead without the newest writes.
				current, _ := c.Current(ctx, "KV_"+b)
				if si.Config.Replicas == want && si.Cluster != nil && si.Cluster.Name == c.Name && current {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("bucket %s: %d replicas configured, cluster %+v; want %d on cluster %s", b, si.Config.Replicas, si.Cluster, want, c.Name)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	one, st1, err := c.ConnectOperator(ctx, 0, store.Limits{Devices: 100, DeploymentsPerDevice: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = st1
	one.Close()
	replicas(1)

	nc, st, err := c.ConnectOperator(ctx, 0, store.Limits{Devices: 100, DeploymentsPerDevice: 1, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	replicas(3)
	// An operator started without a replica count (--nats-url without --iot-fleet-replicas) keeps the
	// three: nats-server scales a stream down when asked, and an update with one replica would have.
	kept, _, err := c.ConnectOperator(ctx, 0, store.Limits{Devices: 100, DeploymentsPerDevice: 1})
	if err != nil {
		t.Fatal(err)
	}
	kept.Close()
	replicas(3)

	t.Run("the permission model is the operator's", func(t *testing.T) {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		// The server answers a refused publish with an asynchronous permissions violation: the request
		// times out, and the stream must not exist.
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		defer rcancel()
		if _, err := js.CreateKeyValue(rctx, jetstream.KeyValueConfig{Bucket: "not-the-fleet"}); err == nil {
			t.Error("the operator created a bucket outside the fleet's: the permission model is not enforced")
		}
		if _, err := c.StreamInfo(ctx, "KV_not-the-fleet"); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("the refused bucket's stream: %v, want not found", err)
		}
	})

	t.Run("a write survives the SIGKILL of its stream's leader", func(t *testing.T) {
		leader, err := c.Leader(ctx, "KV_"+fleet.BucketDevices)
		if err != nil {
			t.Fatal(err)
		}
		i := c.ServerIndex(leader)
		info := fleet.DeviceInfo{Version: fleet.ContractVersion, ID: "dev-1", Labels: map[string]string{"fleet": "a"}}
		if err := st.RegisterDevice(ctx, info); err != nil {
			t.Fatal(err)
		}
		if err := c.Kill(i); err != nil {
			t.Fatal(err)
		}
		var next string
		deadline := time.Now().Add(30 * time.Second)
		for next == "" || next == leader {
			if time.Now().After(deadline) {
				t.Fatalf("no new leader of the devices bucket 30s after %s was killed (now %q)", leader, next)
			}
			time.Sleep(100 * time.Millisecond)
			next, _ = c.Leader(ctx, "KV_"+fleet.BucketDevices)
		}
		got := 0
		for {
			err := st.EachDevice(ctx, func(d *fleet.DeviceInfo) {
				if d.ID == "dev-1" {
					got++
				}
			})
			if err == nil || time.Now().After(deadline) {
				break
			}
			got = 0
			time.Sleep(100 * time.Millisecond)
		}
		if got != 1 {
			t.Errorf("after %s (the leader) was killed, %s leads and holds %d records of dev-1, want 1", leader, next, got)
		}
		if err := c.Restart(i); err != nil {
			t.Fatal(err)
		}
		for ok := false; !ok; ok, _ = c.Current(ctx, "KV_"+fleet.BucketDevices) {
			if time.Now().After(deadline.Add(30 * time.Second)) {
				t.Fatalf("%s restarted but the devices bucket's replicas are not current", leader)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("a step-down moves the stream's leader", func(t *testing.T) {
		from, to, err := c.StepDown(ctx, "KV_"+fleet.BucketState)
		if err != nil {
			t.Fatal(err)
		}
		if from == "" || to == "" || from == to {
			t.Errorf("step-down from %q to %q", from, to)
		}
	})
}

// TestNATSServerBinaryIsThePinnedOne: the processes run the same nats-server as go.mod pins (the
// fixture refuses another version); a missing binary is an error that says how to build it, never a
// skip.
func TestNATSServerBinaryIsThePinnedOne(t *testing.T) {
	if _, err := fleettest.NATSServerBinary(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fleettest.NATSServerVar, "/nonexistent/nats-server")
	_, err := fleettest.NATSServerBinary()
	if err == nil {
		t.Fatal("a missing nats-server binary was accepted")
	}
	t.Log(err)
}
