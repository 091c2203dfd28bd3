package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// FoldIndex keeps x equal to the device and heartbeat buckets until ctx ends: a first pass over each,
// then every change, and a recount from scratch whenever a new selector wants one, the index cannot fold
// a change, or a watch breaks. It also turns the marker a lapsed heartbeat leaves into the operator's
// lapsed record (WriteLapse), and keeps a lapsed record's labels those of its device. synced is called
// after each (re)count, when the counts are the buckets'.
func (s *Store) FoldIndex(ctx context.Context, x *fleet.Index, synced func()) error {
	if x.Trust == nil {
		x.Trust = s.Trust
	}
	return s.refold(ctx, x.Reset, func() error { return s.foldIndexOnce(ctx, x, synced) })
}

func (s *Store) foldIndexOnce(ctx context.Context, x *fleet.Index, synced func()) error {
	recount := x.RecountWanted()
	reconnected := s.Reconnected()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dw, err := s.Devices.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", fleet.BucketDevices, err)
	}
	defer stopWatch(dw)
	hw, err := s.Heartbeats.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", fleet.BucketHeartbeats, err)
	}
	defer stopWatch(hw)
	devices, beats := dw.Updates(), hw.Updates()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-recount:
			return errSelector
		case <-reconnected:
			return errReconnected
		case e, ok := <-devices:
			if !ok {
				return errors.New("device watch closed")
			}
			if e == nil {
				x.SyncedDevices()
				if x.Live() && synced != nil {
					synced()
				}
				continue
			}
			d, err := x.ObserveDevice(change(e))
			if err != nil {
				if s.rejected(err) {
					continue
				}
				return err
			}
			if d != nil && x.Live() && (d.Removed || d.Previous != nil && !maps.Equal(d.Previous.Labels, d.Labels)) {
				if err := s.relabelLapse(ctx, d); err != nil {
					return err
				}
			}
		case e, ok := <-beats:
			if !ok {
				return errors.New("heartbeat watch closed")
			}
			if e == nil {
				x.SyncedHeartbeats()
				if x.Live() && synced != nil {
					synced()
				}
				continue
			}
			lapsed, err := x.ObserveHeartbeat(change(e))
			if err != nil {
				if s.rejected(err) {
					continue
				}
				return err
			}
			if lapsed {
				if err := s.writeLapse(ctx, e.Key(), e.Revision(), e.Created()); err != nil {
					return err
				}
			}
		}
	}
}

func change(e jetstream.KeyValueEntry) fleet.Change {
	return fleet.Change{Revision: e.Revision(), Key: e.Key(), Value: e.Value(), Deleted: e.Operation() != jetstream.KeyValuePut}
}

// WriteLapse replaces the marker (at revision markerRev) that a device's lapsed heartbeat left with the
// operator's lapsed record, naming the labels the device has now; the record never expires. When the
// device's agent wrote a heartbeat since, the compare-and-swap fails and nothing is written: the device
// came back before it was counted stale. A device without a record (or a tombstone) gets no lapsed
// record.
func (s *Store) WriteLapse(ctx context.Context, id string, markerRev uint64) error {
	at := time.Now()
	if s.js != nil {
		if hs, err := s.js.Stream(ctx, kvStream(fleet.BucketHeartbeats)); err == nil {
			if m, err := hs.GetMsg(ctx, markerRev); err == nil {
				at = m.Time
			}
		}
	}
	return s.writeLapse(ctx, id, markerRev, at)
}

// writeLapse is WriteLapse with the marker's time, markerAt: the lapsed record's lastBeat is markerAt
// less the bucket's TTL, the time of the heartbeat the server removed (it removes a message once it is
// a TTL old).
func (s *Store) writeLapse(ctx context.Context, id string, markerRev uint64, markerAt time.Time) error {
	e, err := s.Devices.Get(ctx, fleet.DeviceKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read device %s: %w", id, err)
	}
	d, err := fleet.DecodeDevice(e.Value())
	if err != nil || d.Removed {
		return nil //nolint:nilerr // no device deployments select: nothing to count stale
	}
	if s.Trust != nil {
		s.Trust(d)
	}
	h := fleet.Heartbeat{Version: fleet.ContractVersion, At: time.Now().UTC(), Lapsed: d.Selection()}
	last := markerAt.Add(-s.HeartbeatTTL).UTC().Truncate(time.Second)
	h.Lapsed.LastBeat = &last
	return s.putLapse(ctx, id, h, markerRev)
}

// relabelLapse keeps the lapsed record of a relabelled or removed device naming its labels (none for a
// tombstone), so that its stale count moves with it.
func (s *Store) relabelLapse(ctx context.Context, d *fleet.DeviceInfo) error {
	for attempt := 0; attempt < 100; attempt++ {
		e, err := s.Heartbeats.Get(ctx, fleet.DeviceKey(d.ID))
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read heartbeat of %s: %w", d.ID, err)
		}
		h, err := fleet.DecodeHeartbeat(e.Value())
		if err != nil || h.Lapsed == nil || !h.Lapsed.Selectable() {
			return nil //nolint:nilerr // alive, or not counted anywhere
		}
		cur := d.Selection()
		if h.Lapsed.Removed == cur.Removed && maps.Equal(h.Lapsed.Labels, cur.Labels) {
			return nil
		}
		cur.LastBeat = h.Lapsed.LastBeat // the device is as silent as it was: its last heartbeat stays
		n := fleet.Heartbeat{Version: fleet.ContractVersion, At: time.Now().UTC(), Lapsed: cur, Replaced: h.Lapsed}
		err = s.putLapse(ctx, d.ID, n, e.Revision())
		if err == nil || !errors.Is(err, errLostRace) {
			return err
		}
	}
	return fmt.Errorf("rewrite the lapsed heartbeat of %s: lost the compare-and-swap race 100 times", d.ID)
}

var errLostRace = errors.New("lost the compare-and-swap race")

// putLapse writes a lapsed record over revision rev of a device's heartbeat key, exempt from the
// bucket's TTL (a per-message TTL of "never"). A lost compare-and-swap is errLostRace for relabelLapse
// and success for WriteLapse's caller (the device came back).
func (s *Store) putLapse(ctx context.Context, id string, h fleet.Heartbeat, rev uint64) error {
	if s.js == nil {
		return errors.New("the store has no JetStream connection")
	}
	msg := nats.NewMsg("$KV." + fleet.BucketHeartbeats + "." + fleet.DeviceKey(id))
	msg.Data = fleet.Encode(h)
	msg.Header.Set(jetstream.MsgTTLHeader, "never")
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(rev))
	_, err := s.js.PublishMsg(ctx, msg)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		if h.Replaced == nil {
			return nil
		}
		return errLostRace
	}
	if err != nil {
		return fmt.Errorf("write the lapsed heartbeat of %s: %w", id, err)
	}
	return nil
}
