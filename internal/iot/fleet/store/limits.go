package store

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// Limits size the fleet's buckets: every bucket gets a byte limit and a message limit, and the desired
// bucket's stream a consumer limit, all enforced by the server (a full bucket refuses new keys; a key
// at its history keeps taking writes, which replace its oldest record). docs/fleet.md, "Limits".
type Limits struct {
	// Devices is how many devices the fleet may have (--iot-fleet-max-devices).
	Devices int
	// DeploymentsPerDevice is how many Deployments a device runs at once, on average over the fleet.
	DeploymentsPerDevice int
	// Consumers is how many consumers the desired bucket may have at once (each agent's watch is one);
	// Devices + ConsumerMargin when zero.
	Consumers int
	// Replicas is how many servers of a JetStream cluster keep each bucket: 3 on a broker of three
	// servers, so that losing one loses nothing (docs/fleet-broker.md). Zero keeps what an existing
	// bucket has (an administrator may have raised it on a cluster of their own) and creates a missing
	// one with 1.
	Replicas int
}

// replicasFor is the replica count to open a bucket with: Replicas when set; otherwise the count of the
// bucket's stream as it exists (current), or 1 for a new bucket (current 0).
func (l Limits) replicasFor(current int) int {
	if l.Replicas > 0 {
		return l.Replicas
	}
	return max(current, 1)
}

// The defaults: a fleet of 100,000 devices (what the bench runs) with 2 Deployments each, about 5.5 GB
// of JetStream file storage in all. nats-server reserves every stream's byte limit against its
// max_store when the stream is created or updated, so the limits must fit the server's storage.
const (
	DefaultMaxDevices           = 100_000
	DefaultDeploymentsPerDevice = 2
	// The bytes budgeted per record on average (each record is at most its fleet.Max*RecordBytes,
	// which the buckets' MaxValueSize enforces; typical records are well under these budgets).
	DeviceRecordBudget    = 2 << 10
	HeartbeatRecordBudget = 512
	DesiredRecordBudget   = 4 << 10
	StateRecordBudget     = 256
	// ConsumerMargin is how many consumers of the desired bucket are allowed beyond one per device
	// (the operator's, fleetctl's, restarts that overlap).
	ConsumerMargin = 1024
)

// DefaultLimits are the limits with every default.
func DefaultLimits() Limits {
	return Limits{Devices: DefaultMaxDevices, DeploymentsPerDevice: DefaultDeploymentsPerDevice}
}

// bucketLimits is one bucket's server limits.
type bucketLimits struct {
	msgs, bytes  int64
	maxConsumers int
	denyRollups  bool
}

// of are the limits of bucket.
func (l Limits) of(bucket string) bucketLimits {
	n := int64(max(l.Devices, 1))
	p := int64(max(l.DeploymentsPerDevice, 1))
	switch bucket {
	case fleet.BucketDevices:
		return bucketLimits{msgs: n, bytes: n * DeviceRecordBudget, denyRollups: true}
	case fleet.BucketHeartbeats:
		m := n * HeartbeatHistory
		return bucketLimits{msgs: m, bytes: m * HeartbeatRecordBudget}
	case fleet.BucketDesired:
		m := 2 * n * p // a record, or the marker of a withdrawal, per device and Deployment
		c := l.Consumers
		if c <= 0 {
			c = int(n) + ConsumerMargin
		}
		return bucketLimits{msgs: m, bytes: m * DesiredRecordBudget, maxConsumers: c}
	case fleet.BucketState:
		m := n * p * StateHistory
		return bucketLimits{msgs: m, bytes: m * StateRecordBudget, denyRollups: true}
	}
	return bucketLimits{}
}

// limit gives bucket its limits (and refuses roll-ups where a device could erase others' records with
// one) when its stream does not have them yet.
func limit(ctx context.Context, js jetstream.JetStream, bucket string, bl bucketLimits) error {
	st, err := js.Stream(ctx, kvStream(bucket))
	if err != nil {
		return fmt.Errorf("open bucket %s: %w", bucket, err)
	}
	cfg := st.CachedInfo().Config
	want := cfg
	want.MaxMsgs, want.MaxBytes = bl.msgs, bl.bytes
	if bl.maxConsumers > 0 {
		want.MaxConsumers = bl.maxConsumers
	}
	if bl.denyRollups {
		want.AllowRollup = false
	}
	if want.MaxMsgs == cfg.MaxMsgs && want.MaxBytes == cfg.MaxBytes && want.MaxConsumers == cfg.MaxConsumers && want.AllowRollup == cfg.AllowRollup {
		return nil
	}
	if _, err := js.UpdateStream(ctx, want); err != nil {
		return fmt.Errorf("limit bucket %s: %w", bucket, err)
	}
	return nil
}
