// Package store is the NATS JetStream side of the fleet contract (internal/iot/fleet): it opens the buckets
// and reads and writes the records, state transitions always with compare-and-swap on the key's
// revision. The operator and the agent both use it.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// DefaultHeartbeatTTL is how long a device's heartbeat key lives: an agent sends one every third of it.
const DefaultHeartbeatTTL = 30 * time.Second

// StateHistory is how many records per key the state bucket keeps (the most JetStream allows).
const StateHistory = 64

// HeartbeatHistory is how many records per key the heartbeat bucket keeps: enough for a watch that lags
// a few heartbeats behind to find each revision still in the stream.
const HeartbeatHistory = 8

// LapseMarkerTTL is how long the heartbeat bucket asks the server to keep the marker of a lapsed
// heartbeat (LimitMarkerTTL). nats-server 2.15 removes the marker with the bucket's TTL like any other
// message (its MaxAge spares only "Nats-TTL: never"), so the marker lasts about one heartbeat TTL, not
// this long: the operator, when it is running, replaces it at once with a lapsed record; one that was down
// longer than the marker lasts misses the lapse (the device is then not counted stale until it comes back
// and lapses again).
const LapseMarkerTTL = 24 * time.Hour

// Store reads and writes the fleet's buckets.
type Store struct {
	Devices, Desired, State, Heartbeats jetstream.KeyValue
	// HeartbeatTTL is the heartbeat bucket's TTL.
	HeartbeatTTL time.Duration
	// Hooks report what the folds refuse; set them before folding.
	Hooks Hooks
	// Trust rewrites the labels of every device record the operator reads (the index's fold, the
	// devices a rollout reads, lapsed records): fleet.LabelTrust. Set it before folding; nil: as
	// written.
	Trust fleet.LabelTrust

	mu         sync.Mutex
	reconnects chan struct{}
	nc         *nats.Conn
	js         jetstream.JetStream
	// desired is the desired bucket's stream, opened by the state fold on its first use.
	desired jetstream.Stream
}

// Conn is the connection the store uses (nil for a Store made by hand).
func (s *Store) Conn() *nats.Conn { return s.nc }

// watchReconnects makes Reconnected work: the connection's reconnect handler (which it takes over)
// closes the current channel. A watch restarted then resumes at once instead of waiting for its
// consumer's missed heartbeats after a NATS restart.
func (s *Store) watchReconnects(js jetstream.JetStream) {
	s.reconnects = make(chan struct{})
	s.nc, s.js = js.Conn(), js
	if nc := s.nc; nc != nil {
		nc.SetReconnectHandler(func(*nats.Conn) {
			s.mu.Lock()
			defer s.mu.Unlock()
			close(s.reconnects)
			s.reconnects = make(chan struct{})
		})
	}
}

// Reconnected is closed when the connection next reconnects to NATS (never for a Store made by hand).
func (s *Store) Reconnected() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reconnects == nil {
		s.reconnects = make(chan struct{})
	}
	return s.reconnects
}

// Open opens the buckets, creating any that is missing (or updating its configuration). heartbeatTTL is
// DefaultHeartbeatTTL when zero.
func Open(ctx context.Context, js jetstream.JetStream, heartbeatTTL time.Duration) (*Store, error) {
	return OpenWithLimits(ctx, js, heartbeatTTL, DefaultLimits())
}

// OpenWithLimits is Open with the buckets sized by limits (Limits).
func OpenWithLimits(ctx context.Context, js jetstream.JetStream, heartbeatTTL time.Duration, limits Limits) (*Store, error) {
	if heartbeatTTL <= 0 {
		heartbeatTTL = DefaultHeartbeatTTL
	}
	open := func(cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
		current := 0
		if limits.Replicas == 0 {
			// nats-server scales a stream down when asked: an update with one replica would silently
			// take the redundancy of a bucket someone raised on their cluster.
			stream, err := js.Stream(ctx, kvStream(cfg.Bucket))
			switch {
			case err == nil:
				current = stream.CachedInfo().Config.Replicas
			case !errors.Is(err, jetstream.ErrStreamNotFound):
				return nil, fmt.Errorf("open bucket %s: %w", cfg.Bucket, err)
			}
		}
		cfg.Replicas = limits.replicasFor(current)
		kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open bucket %s: %w", cfg.Bucket, err)
		}
		return kv, nil
	}
	s := &Store{HeartbeatTTL: heartbeatTTL}
	s.watchReconnects(js)
	var err error
	// MaxValueSize: the server refuses a record beyond the bounds the operator's decoder enforces
	// (fleet.Max*RecordBytes). The desired bucket is the operator's own (admission bounds the score).
	if s.Devices, err = open(jetstream.KeyValueConfig{Bucket: fleet.BucketDevices, MaxValueSize: fleet.MaxDeviceRecordBytes, Description: "fleet contract v2: device records"}); err != nil {
		return nil, err
	}
	if s.Desired, err = open(jetstream.KeyValueConfig{Bucket: fleet.BucketDesired, Description: "fleet contract v2: desired state per device and deployment"}); err != nil {
		return nil, err
	}
	// History keeps superseded state records a while: a watch that lags behind a burst of transitions
	// still finds each revision in the stream instead of a gap (which would cost a recount).
	if s.State, err = open(jetstream.KeyValueConfig{Bucket: fleet.BucketState, History: StateHistory, MaxValueSize: fleet.MaxStateRecordBytes, Description: "fleet contract v2: device state per deployment"}); err != nil {
		return nil, err
	}
	// A device may write its own keys of these buckets: with roll-ups allowed, a "Nats-Rollup: all"
	// header on its own key would erase every other device's records (docs/fleet.md, "Identity and
	// permissions"). The heartbeat bucket cannot refuse them: its TTL markers need roll-ups.
	// limit refuses them in those two buckets (Limits.of).
	// A key whose TTL lapses leaves a marker (kept LapseMarkerTTL) that the operator turns into a lapsed
	// record; History keeps a lagging watch gap-free as for the state bucket.
	if s.Heartbeats, err = open(jetstream.KeyValueConfig{Bucket: fleet.BucketHeartbeats, TTL: heartbeatTTL, History: HeartbeatHistory,
		MaxValueSize: fleet.MaxHeartbeatRecordBytes, LimitMarkerTTL: max(LapseMarkerTTL, heartbeatTTL), Description: "fleet contract v2: device liveness"}); err != nil {
		return nil, err
	}
	for _, b := range []string{fleet.BucketDevices, fleet.BucketDesired, fleet.BucketState, fleet.BucketHeartbeats} {
		if err := limit(ctx, js, b, limits.of(b)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// kvStream is the stream that holds a bucket.
func kvStream(bucket string) string { return "KV_" + bucket }

// RegisterDevice writes a device's record (labels and inventory), only when it changed, with
// compare-and-swap on the record it replaces, whose labels it names (fleet.DeviceInfo.Previous).
func (s *Store) RegisterDevice(ctx context.Context, info fleet.DeviceInfo) error {
	if err := fleet.ValidDeviceID(info.ID); err != nil {
		return err
	}
	info.Version, info.Removed = fleet.ContractVersion, false
	return s.replaceDevice(ctx, info.ID, func(cur *fleet.DeviceInfo) *fleet.DeviceInfo {
		n := info
		if cur != nil {
			n.Previous = cur.Selection()
		}
		return &n
	})
}

// RemoveDevice replaces a device's record with a tombstone: deployments stop selecting it, and withdraw
// what they gave it.
func (s *Store) RemoveDevice(ctx context.Context, id string) error {
	return s.replaceDevice(ctx, id, func(cur *fleet.DeviceInfo) *fleet.DeviceInfo {
		if cur == nil || cur.Removed {
			return nil
		}
		return &fleet.DeviceInfo{Version: fleet.ContractVersion, ID: id, Removed: true, Previous: cur.Selection()}
	})
}

// replaceDevice writes next(current record) over a device's record with compare-and-swap, unless next
// returns nil or the same record (Previous aside).
func (s *Store) replaceDevice(ctx context.Context, id string, next func(*fleet.DeviceInfo) *fleet.DeviceInfo) error {
	key := fleet.DeviceKey(id)
	for attempt := 0; ; attempt++ {
		var (
			cur *fleet.DeviceInfo
			rev uint64
		)
		e, err := s.Devices.Get(ctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			if cur, err = fleet.DecodeDevice(e.Value()); err != nil {
				cur = nil // an unreadable record is replaced as if absent, keeping the CAS
			}
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		default:
			return fmt.Errorf("read device %s: %w", id, err)
		}
		n := next(cur)
		if n == nil || (cur != nil && sameDevice(cur, n)) {
			return nil
		}
		if rev == 0 {
			_, err = s.Devices.Create(ctx, key, fleet.Encode(n))
		} else {
			_, err = s.Devices.Update(ctx, key, fleet.Encode(n), rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("write device %s: %w", id, err)
		}
		if attempt >= 100 {
			return fmt.Errorf("write device %s: lost the compare-and-swap race %d times", id, attempt+1)
		}
	}
}

// sameDevice says whether two device records say the same, whatever they replaced.
func sameDevice(a, b *fleet.DeviceInfo) bool {
	x, y := *a, *b
	x.Previous, y.Previous = nil, nil
	return bytes.Equal(fleet.Encode(x), fleet.Encode(y))
}

// Heartbeat marks a device alive for HeartbeatTTL. last is the revision of the device's previous
// heartbeat as this caller wrote it (0: none known); the result is the new one's, for the next call.
// It writes with compare-and-swap, so that a heartbeat that replaces the operator's lapsed record says
// so (fleet.Heartbeat.Replaced) and the device is counted out of stale exactly once.
func (s *Store) Heartbeat(ctx context.Context, id string, last uint64) (uint64, error) {
	key := fleet.DeviceKey(id)
	beat := fleet.Heartbeat{Version: fleet.ContractVersion, At: time.Now().UTC()}
	if last > 0 {
		if rev, err := s.Heartbeats.Update(ctx, key, fleet.Encode(beat), last); err == nil {
			return rev, nil
		}
	}
	for attempt := 0; ; attempt++ {
		b := beat
		var (
			rev uint64
			err error
		)
		e, gerr := s.Heartbeats.Get(ctx, key)
		switch {
		case gerr == nil:
			if h, derr := fleet.DecodeHeartbeat(e.Value()); derr == nil && h.Lapsed != nil {
				b.Replaced = h.Lapsed
			}
			rev, err = s.rollUpHeartbeat(ctx, key, b, e.Revision())
		case errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted):
			// Absent, or the marker of a lapse the operator has not recorded yet: Create replaces
			// the marker with compare-and-swap too.
			rev, err = s.Heartbeats.Create(ctx, key, fleet.Encode(b))
		default:
			return 0, fmt.Errorf("read heartbeat of %s: %w", id, gerr)
		}
		if err == nil {
			return rev, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return 0, fmt.Errorf("write heartbeat of %s: %w", id, err)
		}
		if attempt >= 100 {
			return 0, fmt.Errorf("write heartbeat of %s: lost the compare-and-swap race %d times", id, attempt+1)
		}
	}
}

// rollUpHeartbeat writes a heartbeat over the record at revision rev of a device's heartbeat key with
// compare-and-swap, and erases the key's older messages (header "Nats-Rollup: sub"). A lapsed record
// never expires (Nats-TTL: never): left in the key's history, it would outlive the heartbeats written
// after it, and the server, which writes a marker only when it removes a key's last message, would write
// none when the device stopped again, so its next lapse would go unseen (docs/fleet.md, "Heartbeat").
func (s *Store) rollUpHeartbeat(ctx context.Context, key string, h fleet.Heartbeat, rev uint64) (uint64, error) {
	if s.js == nil {
		return 0, errors.New("the store has no JetStream connection")
	}
	msg := nats.NewMsg("$KV." + fleet.BucketHeartbeats + "." + key)
	msg.Data = fleet.Encode(h)
	msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(rev))
	ack, err := s.js.PublishMsg(ctx, msg)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return 0, jetstream.ErrKeyRevisionMismatch
	}
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// EachDevice calls fn with every device record, in key order as the server keeps them.
func (s *Store) EachDevice(ctx context.Context, fn func(*fleet.DeviceInfo)) error {
	return each(ctx, s.Devices, "", func(e jetstream.KeyValueEntry) {
		if d, err := fleet.DecodeDevice(e.Value()); err == nil && d.ID == e.Key() && !d.Removed {
			if s.Trust != nil {
				s.Trust(d)
			}
			fn(d)
		}
	})
}

// EachDesired calls fn with every device's desired state for deployment d.
func (s *Store) EachDesired(ctx context.Context, d fleet.DeploymentKey, fn func(device string, desired *fleet.Desired)) error {
	return each(ctx, s.Desired, fleet.DesiredDeploymentFilter(d), func(e jetstream.KeyValueEntry) {
		device, _, err := fleet.ParseDesiredKey(e.Key())
		if err != nil {
			return
		}
		if des, err := fleet.DecodeDesired(e.Value()); err == nil {
			fn(device, des)
		}
	})
}

// EachState calls fn with every device's state record for deployment d (records that do not decode are
// skipped). A rollback reads them to know which devices it gave the previous score answered.
func (s *Store) EachState(ctx context.Context, d fleet.DeploymentKey, fn func(device string, st *fleet.State)) error {
	return each(ctx, s.State, fleet.StateDeploymentFilter(d), func(e jetstream.KeyValueEntry) {
		_, device, err := fleet.ParseStateKey(e.Key())
		if err != nil {
			return
		}
		if st, err := fleet.DecodeState(e.Value()); err == nil {
			fn(device, st)
		}
	})
}

// Publish writes a device's desired state for deployment d, only when it changed; it says whether it
// wrote.
func (s *Store) Publish(ctx context.Context, device string, d fleet.DeploymentKey, desired fleet.Desired) (bool, error) {
	desired.Version = fleet.ContractVersion
	return putIfChanged(ctx, s.Desired, fleet.DesiredKey(device, d), fleet.Encode(desired))
}

// Withdraw takes deployment d from a device: its desired state is deleted first (which tells the agent to
// stop the containers), then its state record turns Removed, so the counters count it out. In that order
// an agent that reports concurrently (Report) either reports before the Removed record, or loses the
// compare-and-swap, finds the desired state gone and reports nothing.
func (s *Store) Withdraw(ctx context.Context, device string, d fleet.DeploymentKey) error {
	if err := s.Desired.Delete(ctx, fleet.DesiredKey(device, d)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete desired state of %s: %w", device, err)
	}
	_, err := s.transition(ctx, d, device, func(cur *fleet.State) (*fleet.State, error) {
		if cur == nil || cur.Phase == fleet.PhaseRemoved {
			return nil, nil
		}
		return fleet.Next(cur, cur.Generation, fleet.PhaseRemoved, "withdrawn", time.Now()), nil
	})
	return err
}

// PurgeDeployment removes every desired-state and state record of a deleted deployment. The caller
// forgets the deployment's counters first. The state bucket refuses roll-ups (Limits), so its
// records go with one purge of the stream's subjects (which leaves no marker) rather than KV purges.
func (s *Store) PurgeDeployment(ctx context.Context, d fleet.DeploymentKey) (int, error) {
	n := 0
	for _, b := range []struct {
		kv     jetstream.KeyValue
		filter string
	}{{s.Desired, fleet.DesiredDeploymentFilter(d)}, {s.State, fleet.StateDeploymentFilter(d)}} {
		var keys []string
		if err := each(ctx, b.kv, b.filter, func(e jetstream.KeyValueEntry) { keys = append(keys, e.Key()) }); err != nil {
			return n, err
		}
		if b.kv == s.State && s.js != nil && len(keys) > 0 {
			st, err := s.js.Stream(ctx, kvStream(fleet.BucketState))
			if err == nil {
				err = st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+fleet.BucketState+"."+b.filter))
			}
			if err != nil {
				return n, fmt.Errorf("purge %s: %w", b.filter, err)
			}
			n += len(keys)
			continue
		}
		for _, k := range keys {
			if err := b.kv.Purge(ctx, k); err != nil {
				return n, fmt.Errorf("purge %s: %w", k, err)
			}
			n++
		}
	}
	return n, nil
}

// Transition moves a device's state for deployment d to phase p of generation gen, with compare-and-swap
// on the record's revision (retrying on a lost race), and writes nothing when the record already says
// so. It says whether it wrote.
func (s *Store) Transition(ctx context.Context, d fleet.DeploymentKey, device string, gen int64, p fleet.Phase, msg string) (bool, error) {
	return s.transition(ctx, d, device, func(cur *fleet.State) (*fleet.State, error) {
		return fleet.Next(cur, gen, p, msg, time.Now()), nil
	})
}

// Report is the agent's Transition: it writes only while the device's desired state for d still exists
// at generation gen, checked after each read of the state record, so that a report racing with the
// operator's Withdraw never counts a withdrawn device again.
func (s *Store) Report(ctx context.Context, d fleet.DeploymentKey, device string, gen int64, p fleet.Phase, msg string) (bool, error) {
	return s.transition(ctx, d, device, func(cur *fleet.State) (*fleet.State, error) {
		des, err := s.desiredAtLeast(ctx, fleet.DesiredKey(device, d), gen)
		if err != nil {
			return nil, err
		}
		if des == nil || des.Generation != gen {
			return nil, nil // withdrawn, or a newer (or unreadable) desired state: this report is moot
		}
		return fleet.Next(cur, gen, p, msg, time.Now()), nil
	})
}

// StaleReadWait is how long a read of a record the caller knows exists (at least at some generation)
// is tried again when a server answers with none or an older one. On a JetStream cluster a KV get is a
// direct get that any replica answers, a follower included, which may not have applied the newest
// writes yet (the device's watch is delivered by the stream's leader): without this, an agent whose
// report read such a follower would take its transition for moot and never write it.
const StaleReadWait = 2 * time.Second

// desiredAtLeast reads the desired state at key, which the caller saw at generation gen: nil when it
// was withdrawn (a delete or purge marker) or does not decode. A missing key or an older generation is
// read again, up to StaleReadWait, before it is believed.
func (s *Store) desiredAtLeast(ctx context.Context, key string, gen int64) (*fleet.Desired, error) {
	deadline := time.Now().Add(StaleReadWait)
	for {
		e, err := s.Desired.Get(ctx, key)
		var des *fleet.Desired
		switch {
		case errors.Is(err, jetstream.ErrKeyDeleted):
			return nil, nil
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return nil, fmt.Errorf("read desired state: %w", err)
		default:
			if des, err = fleet.DecodeDesired(e.Value()); err != nil {
				return nil, nil //nolint:nilerr // unreadable: nothing to report against
			}
			if des.Generation >= gen {
				return des, nil
			}
		}
		if time.Now().After(deadline) {
			return des, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StateOf is a device's current state record for deployment d, or nil.
func (s *Store) StateOf(ctx context.Context, d fleet.DeploymentKey, device string) (*fleet.State, error) {
	cur, _, err := s.read(ctx, fleet.StateKey(d, device))
	return cur, err
}

func (s *Store) read(ctx context.Context, key string) (*fleet.State, uint64, error) {
	e, err := s.State.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", key, err)
	}
	cur, err := fleet.DecodeState(e.Value())
	if err != nil {
		return nil, e.Revision(), nil // an unreadable record is replaced as if absent, keeping the CAS
	}
	return cur, e.Revision(), nil
}

func (s *Store) transition(ctx context.Context, d fleet.DeploymentKey, device string, next func(*fleet.State) (*fleet.State, error)) (bool, error) {
	key := fleet.StateKey(d, device)
	for attempt := 0; ; attempt++ {
		cur, rev, err := s.read(ctx, key)
		if err != nil {
			return false, err
		}
		n, err := next(cur)
		if err != nil || n == nil {
			return false, err
		}
		if rev == 0 {
			_, err = s.State.Create(ctx, key, fleet.Encode(n))
		} else {
			_, err = s.State.Update(ctx, key, fleet.Encode(n), rev)
		}
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, fmt.Errorf("write %s: %w", key, err)
		}
		if attempt >= 100 {
			return false, fmt.Errorf("write %s: lost the compare-and-swap race %d times", key, attempt+1)
		}
	}
}

// putIfChanged puts value at key unless the key already holds exactly it.
func putIfChanged(ctx context.Context, kv jetstream.KeyValue, key string, value []byte) (bool, error) {
	e, err := kv.Get(ctx, key)
	if err == nil && bytes.Equal(e.Value(), value) {
		return false, nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if _, err := kv.Put(ctx, key, value); err != nil {
		return false, fmt.Errorf("write %s: %w", key, err)
	}
	return true, nil
}

// each calls fn with the current value of every key matching filter ("" for all), and returns once the
// watcher has delivered them all.
func each(ctx context.Context, kv jetstream.KeyValue, filter string, fn func(jetstream.KeyValueEntry)) error {
	var (
		w   jetstream.KeyWatcher
		err error
	)
	if filter == "" {
		w, err = kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	} else {
		w, err = kv.Watch(ctx, filter, jetstream.IgnoreDeletes())
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", kv.Bucket(), err)
	}
	defer stopWatch(w)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("watch %s: closed before its initial values", kv.Bucket())
			}
			if e == nil {
				return nil
			}
			fn(e)
		}
	}
}

// Bind opens the buckets as the operator created them, without changing their configuration: what an
// agent does, so that the heartbeat TTL stays the operator's. It fails while a bucket does not exist.
func Bind(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	s := &Store{}
	s.watchReconnects(js)
	for _, b := range []struct {
		name string
		kv   *jetstream.KeyValue
	}{{fleet.BucketDevices, &s.Devices}, {fleet.BucketDesired, &s.Desired}, {fleet.BucketState, &s.State}, {fleet.BucketHeartbeats, &s.Heartbeats}} {
		kv, err := js.KeyValue(ctx, b.name)
		if err != nil {
			return nil, fmt.Errorf("bind bucket %s: %w", b.name, err)
		}
		*b.kv = kv
	}
	st, err := s.Heartbeats.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("read bucket %s: %w", fleet.BucketHeartbeats, err)
	}
	s.HeartbeatTTL = st.TTL()
	if s.HeartbeatTTL <= 0 {
		s.HeartbeatTTL = DefaultHeartbeatTTL
	}
	return s, nil
}
