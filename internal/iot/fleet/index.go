package fleet

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
)

// SelectionCounts are what the index knows of one deployment's selector.
type SelectionCounts struct {
	// Matched is how many registered devices the selector selects.
	Matched int64
	// Stale is how many of them stopped sending heartbeats.
	Stale int64
	// Epoch changes whenever a device joins or leaves the selection (and at every recount): a reconcile
	// that saw epoch E knows the selected devices are the same while it stays E.
	Epoch uint64
	// Beats are the last heartbeats of the stale devices, by step (the lastBeat of their lapsed records).
	Beats BeatRange
}

// Index keeps, per deployment, how many devices its selector selects and how many of those are stale,
// moved by the device records' and the heartbeat records' transitions (each record names the labels of
// the one it replaced). Its memory grows with deployments, never with devices. It is safe for concurrent
// use.
//
// Use: Select each deployment's selector (a new or changed selector asks for a recount); for each
// (re)count, Reset, then Observe every entry of a watch over BucketDevices (ObserveDevice) and
// BucketHeartbeats (ObserveHeartbeat) up to the end of its initial values, SyncedDevices and
// SyncedHeartbeats, then each later change. An error from an Observe means the counts may be wrong:
// Reset and start again.
type Index struct {
	// Trust rewrites each device record's labels before it is counted (nil: as written). Set it
	// before the first Observe; it must not change afterwards (the counts would mix two rules).
	Trust LabelTrust
	// TrustedKeys are the label keys the policy of a namespace's Deployments lets only credentials
	// give (nil: none): their selectors match those keys against DeviceLabels.Credential (View).
	TrustedKeys func(namespace string) []string

	mu      sync.Mutex
	sels    map[DeploymentKey]*selection
	devices stream
	beats   stream
	epoch   uint64
	dirty   map[DeploymentKey]struct{}
	// recount is closed when a recount is wanted (a new selector).
	recount  chan struct{}
	recounts int
}

// stream is where the watch over one bucket stands.
type stream struct {
	live    bool
	lastRev uint64
}

// next checks that a change follows the last one seen once the initial pass is over.
func (s *stream) next(bucket string, rev uint64) error {
	if s.live && s.lastRev != 0 && rev != s.lastRev+1 {
		return fmt.Errorf("%w: %s revision %d after %d", ErrGap, bucket, rev, s.lastRev)
	}
	s.lastRev = max(s.lastRev, rev)
	return nil
}

type selection struct {
	text    string
	trusted []string
	sel     labels.Selector
	counted bool // counted since the last Reset
	beats   beatSteps
	SelectionCounts
}

func (s *selection) matches(l *DeviceLabels) bool {
	return l.Selectable() && s.sel.Matches(labels.Set(l.View(s.trusted)))
}

// Select sets deployment d's selector (text is its canonical form) and returns its counts, which are
// valid when ok. A selector the index does not count yet asks for a recount; ok is false until it is
// done.
func (x *Index) Select(d DeploymentKey, text string, sel labels.Selector) (SelectionCounts, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sels == nil {
		x.sels = map[DeploymentKey]*selection{}
	}
	s := x.sels[d]
	if s == nil || s.text != text {
		ns := &selection{text: text, sel: sel}
		if x.TrustedKeys != nil {
			ns.trusted = x.TrustedKeys(d.Namespace)
		}
		x.sels[d] = ns
		x.wantRecount()
		return SelectionCounts{}, false
	}
	if !s.counted || !x.devices.live || !x.beats.live {
		return SelectionCounts{}, false
	}
	c := s.SelectionCounts
	c.Beats = s.beats.rangeOf()
	return c, true
}

// Forget drops a deleted deployment's selector.
func (x *Index) Forget(d DeploymentKey) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.sels, d)
	delete(x.dirty, d)
}

func (x *Index) wantRecount() {
	if x.recount == nil {
		x.recount = make(chan struct{})
	}
	select {
	case <-x.recount:
	default:
		close(x.recount)
	}
}

// RecountWanted is closed when a new selector needs a recount: the watches start again from Reset.
func (x *Index) RecountWanted() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.recount == nil {
		x.recount = make(chan struct{})
	}
	return x.recount
}

// Reset zeroes every count and starts a recount of every selector known now.
func (x *Index) Reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.epoch > 0 {
		x.recounts++
	}
	x.epoch++
	for d, s := range x.sels {
		s.SelectionCounts = SelectionCounts{Epoch: x.epoch}
		s.beats = beatSteps{}
		s.counted = true
		x.markDirty(d)
	}
	x.devices, x.beats = stream{}, stream{}
	x.recount = make(chan struct{})
}

// Recounts is how many times the index was reset after the first count.
func (x *Index) Recounts() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.recounts
}

// SyncedDevices ends the initial pass over BucketDevices.
func (x *Index) SyncedDevices() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.devices.live = true
}

// SyncedHeartbeats ends the initial pass over BucketHeartbeats.
func (x *Index) SyncedHeartbeats() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.beats.live = true
}

// Live says whether both initial passes are over.
func (x *Index) Live() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.devices.live && x.beats.live
}

// ObserveDevice folds one change of BucketDevices. Before SyncedDevices it counts the record as the
// device's current one; after, it moves the device from its previous labels to its new ones. It returns
// the device's record (nil for a change it does not count).
func (x *Index) ObserveDevice(ch Change) (*DeviceInfo, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.devices.next(BucketDevices, ch.Revision); err != nil {
		return nil, err
	}
	if ch.Deleted {
		if !x.devices.live {
			return nil, nil
		}
		// RemoveDevice leaves a tombstone; a key deleted by hand leaves no trace of its labels.
		return nil, fmt.Errorf("%w: device %s", ErrUnknownRemoval, ch.Key)
	}
	d, err := DecodeDeviceAt(ch.Key, ch.Value)
	if err != nil {
		// A refused record selects nowhere. Live, it replaced a record whose labels may be counted:
		// the index recounts (rate-limited by the fold).
		rej := rejection(RecordsDevices, ch.Key, err)
		if ValidToken(ch.Key) {
			rej.Device = ch.Key
		}
		if x.devices.live {
			rej.Recount = fmt.Errorf("%w: device %s replaced by a refused record", ErrUnknownRemoval, clip(ch.Key))
		}
		return nil, rej
	}
	if x.Trust != nil {
		x.Trust(d)
	}
	cur := d.Selection()
	for key, s := range x.sels {
		if !s.counted {
			continue
		}
		before := x.devices.live && s.matches(d.Previous)
		after := s.matches(cur)
		if before == after {
			continue
		}
		if after {
			s.Matched++
		} else {
			if s.Matched == 0 {
				return nil, fmt.Errorf("%w: device %s leaves the selection of %s, which selects none", ErrImpossible, d.ID, key)
			}
			s.Matched--
		}
		s.Epoch = x.nextEpoch()
		x.markDirty(key)
	}
	return d, nil
}

// ObserveHeartbeat folds one change of BucketHeartbeats. It says whether the change is the marker of a
// lapsed heartbeat (a deleted key), for which the caller writes a lapsed record.
func (x *Index) ObserveHeartbeat(ch Change) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.beats.next(BucketHeartbeats, ch.Revision); err != nil {
		return false, err
	}
	if ch.Deleted {
		return ValidToken(ch.Key), nil
	}
	if !ValidToken(ch.Key) {
		return false, &Rejection{Records: RecordsHeartbeats, Key: ch.Key, Reason: ReasonForeign, Err: errors.New("not a device ID")}
	}
	h, err := DecodeHeartbeat(ch.Value)
	if err != nil {
		rej := rejection(RecordsHeartbeats, ch.Key, err)
		rej.Device = ch.Key
		if x.beats.live {
			rej.Recount = fmt.Errorf("%w: heartbeat of %s replaced by a refused record", ErrUnknownRemoval, ch.Key)
		}
		return false, rej
	}
	for key, s := range x.sels {
		if !s.counted {
			continue
		}
		delta := int64(0)
		if x.beats.live && h.Replaced != nil && s.matches(h.Replaced) {
			delta--
			s.beats.remove(h.Replaced.LastBeat)
		}
		if h.Lapsed != nil && s.matches(h.Lapsed) {
			delta++
			s.beats.add(h.Lapsed.LastBeat)
		}
		if delta == 0 {
			if h.Lapsed != nil && h.Replaced != nil {
				x.markDirty(key) // relabelled within the selection: its time may have moved
			}
			continue
		}
		if s.Stale+delta < 0 {
			return false, fmt.Errorf("%w: device %s comes back to the selection of %s, which counts none stale", ErrImpossible, ch.Key, key)
		}
		s.Stale += delta
		x.markDirty(key)
	}
	return false, nil
}

func (x *Index) nextEpoch() uint64 {
	x.epoch++
	return x.epoch
}

func (x *Index) markDirty(d DeploymentKey) {
	if x.dirty == nil {
		x.dirty = map[DeploymentKey]struct{}{}
	}
	x.dirty[d] = struct{}{}
}

// Dirty returns, and clears, the deployments whose counts changed since the last call.
func (x *Index) Dirty() []DeploymentKey {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]DeploymentKey, 0, len(x.dirty))
	for d := range x.dirty {
		out = append(out, d)
	}
	clear(x.dirty)
	return out
}
