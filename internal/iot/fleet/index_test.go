package fleet

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// indexWorld is a fleet as the two buckets record it: each device's current device record and heartbeat
// record, written in the contract's chains, and the changes a watcher of each bucket sees, in order.
type indexWorld struct {
	devices, beats       map[string][]byte // current value; nil: a marker (beats) or absent
	devLog, beatLog      []Change
	devRev, beatRev      uint64
	lastDevice, lastBeat map[string]Change
}

func newIndexWorld() *indexWorld {
	return &indexWorld{devices: map[string][]byte{}, beats: map[string][]byte{},
		lastDevice: map[string]Change{}, lastBeat: map[string]Change{}}
}

func (w *indexWorld) device(id string) *DeviceInfo {
	if w.devices[id] == nil {
		return nil
	}
	d, err := DecodeDeviceAt(id, w.devices[id])
	if err != nil {
		return nil // a refused record: the agent replaces it as if absent, the index counts it nowhere
	}
	return d
}

// raw writes value under a device's key of the device (devices) or heartbeat bucket, as a hostile
// device can.
func (w *indexWorld) raw(devices bool, id string, value []byte) {
	if devices {
		w.devRev++
		w.devices[id] = value
		ch := Change{Revision: w.devRev, Key: id, Value: value}
		w.devLog = append(w.devLog, ch)
		w.lastDevice[id] = ch
		return
	}
	w.beatRev++
	w.beats[id] = value
	ch := Change{Revision: w.beatRev, Key: id, Value: value}
	w.beatLog = append(w.beatLog, ch)
	w.lastBeat[id] = ch
}

func (w *indexWorld) writeDevice(d DeviceInfo) {
	d.Version = ContractVersion
	if cur := w.device(d.ID); cur != nil {
		d.Previous = cur.Selection()
	}
	w.devRev++
	w.devices[d.ID] = Encode(d)
	ch := Change{Revision: w.devRev, Key: d.ID, Value: w.devices[d.ID]}
	w.devLog = append(w.devLog, ch)
	w.lastDevice[d.ID] = ch
}

func (w *indexWorld) beat(id string) *Heartbeat {
	if w.beats[id] == nil {
		return nil
	}
	h, err := DecodeHeartbeat(w.beats[id])
	if err != nil {
		return nil
	}
	return h
}

func (w *indexWorld) writeBeat(id string, h *Heartbeat) {
	w.beatRev++
	ch := Change{Revision: w.beatRev, Key: id, Deleted: h == nil}
	w.beats[id] = nil
	if h != nil {
		h.Version = ContractVersion
		w.beats[id] = Encode(h)
		ch.Value = w.beats[id]
	}
	w.beatLog = append(w.beatLog, ch)
	w.lastBeat[id] = ch
}

// lapse is what the operator does on a marker: a lapsed record naming the device's current labels.
func (w *indexWorld) lapse(id string) {
	if d := w.device(id); d != nil && !d.Removed {
		l := d.Selection()
		last := time.Unix(1_800_000_000+int64(w.beatRev)*97, 0).UTC() // a new minute, most times
		l.LastBeat = &last
		w.writeBeat(id, &Heartbeat{Lapsed: l})
	}
}

// relabelLapse is what the operator does when a lapsed device changes: the lapsed record follows.
func (w *indexWorld) relabelLapse(id string) {
	h, d := w.beat(id), w.device(id)
	if h == nil || h.Lapsed == nil || !h.Lapsed.Selectable() || d == nil {
		return
	}
	if cur := d.Selection(); cur.Removed != h.Lapsed.Removed || !maps.Equal(cur.Labels, h.Lapsed.Labels) {
		cur.LastBeat = h.Lapsed.LastBeat
		w.writeBeat(id, &Heartbeat{Lapsed: cur, Replaced: h.Lapsed})
	}
}

// recount is what the index should say for sel: matched and stale devices.
func (w *indexWorld) recount(sel labels.Selector) (matched, stale int64) {
	for id := range w.devices {
		d := w.device(id)
		if d == nil || d.Removed || !sel.Matches(labels.Set(d.Labels)) {
			continue
		}
		matched++
	}
	for id := range w.beats {
		if h := w.beat(id); h != nil && h.Lapsed != nil && h.Lapsed.Selectable() && sel.Matches(labels.Set(h.Lapsed.Labels)) {
			stale++
		}
	}
	return matched, stale
}

// recountBeats is what the index should say of the last heartbeats of sel's stale devices: the oldest
// and the newest, rounded down to BeatStep (zero when none is stale).
func (w *indexWorld) recountBeats(sel labels.Selector) (oldest, newest time.Time) {
	for id := range w.beats {
		h := w.beat(id)
		if h == nil || h.Lapsed == nil || !h.Lapsed.Selectable() || !sel.Matches(labels.Set(h.Lapsed.Labels)) {
			continue
		}
		t := h.Lapsed.LastBeat.Truncate(BeatStep).UTC()
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
		if newest.IsZero() || t.After(newest) {
			newest = t
		}
	}
	return oldest, newest
}

// initial is what a new watch of each bucket delivers first: the last change of every key.
func initial(last map[string]Change) []Change {
	var out []Change
	for _, ch := range last {
		out = append(out, ch)
	}
	return out
}

// TestIndexRandomInterleavings: devices register, are relabelled, removed and registered again; their
// heartbeats lapse and come back, also while relabelled; the operator restarts or misses a change now and
// then. Whatever happens, the matched and stale counts of every selector equal a recount of the buckets.
func TestIndexRandomInterleavings(t *testing.T) { testIndexInterleavings(t, false) }

// TestIndexHostileDevices: the same histories, while hostile devices write undecodable, oversized and
// out-of-bounds device and heartbeat records, and device records naming another device, over their own
// keys (and register and beat like any device in between). The counts still equal a recount of the
// buckets, in which a refused record selects nowhere, after every step.
func TestIndexHostileDevices(t *testing.T) {
	if n := testIndexInterleavings(t, true); n == 0 {
		t.Error("no hostile record was written")
	}
}

func testIndexInterleavings(t *testing.T, hostile bool) (hostileWrites int) {
	beatsChecked := 0
	defer func() {
		if beatsChecked == 0 && !t.Failed() {
			t.Error("no step had a stale device: the heartbeat times were never compared")
		}
	}()
	zones := []string{"a", "b", "c"}
	type dep struct {
		key DeploymentKey
		sel labels.Selector
	}
	var deps []dep
	for i, ls := range []metav1.LabelSelector{
		{MatchLabels: map[string]string{"zone": "a"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "c"}}}},
		{},
	} {
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			t.Fatal(err)
		}
		deps = append(deps, dep{DeploymentKey{Namespace: "ns", Name: fmt.Sprint("d", i)}, sel})
	}
	for seed := range uint64(25) {
		rng := rand.New(rand.NewPCG(seed, seed*3+1))
		w := newIndexWorld()
		x := &Index{}
		devSeen, beatSeen := 0, 0
		missed := false
		recount := func() {
			x.Reset()
			for _, ch := range initial(w.lastDevice) {
				if _, err := x.ObserveDevice(ch); err != nil && !refusedOnly(err) {
					t.Fatalf("seed %d: initial device pass: %v", seed, err)
				}
			}
			x.SyncedDevices()
			for _, ch := range initial(w.lastBeat) {
				if _, err := x.ObserveHeartbeat(ch); err != nil && !refusedOnly(err) {
					t.Fatalf("seed %d: initial heartbeat pass: %v", seed, err)
				}
			}
			x.SyncedHeartbeats()
			devSeen, beatSeen, missed = len(w.devLog), len(w.beatLog), false
		}
		for _, d := range deps {
			x.Select(d.key, d.sel.String(), d.sel)
		}
		recount()
		for step := range 400 {
			id := fmt.Sprint("dev-", rng.IntN(10))
			cur := w.device(id)
			switch r := rng.IntN(20); {
			case r < 6: // register or relabel
				w.writeDevice(DeviceInfo{ID: id, Labels: map[string]string{"zone": zones[rng.IntN(len(zones))]}})
				w.relabelLapse(id)
			case r < 8: // remove
				if cur != nil && !cur.Removed {
					w.writeDevice(DeviceInfo{ID: id, Removed: true})
					w.relabelLapse(id)
				}
			case r < 12: // a heartbeat: replaces a lapsed record, says so
				h := &Heartbeat{At: time.Unix(int64(step), 0)}
				if prev := w.beat(id); prev != nil && prev.Lapsed != nil {
					h.Replaced = prev.Lapsed
				}
				w.writeBeat(id, h)
			case r < 15: // the heartbeat lapses: a marker, then (unless the device came back first) the lapsed record
				if prev := w.beat(id); prev != nil && prev.Lapsed == nil {
					w.writeBeat(id, nil)
					if rng.IntN(4) > 0 {
						w.lapse(id)
					} else {
						w.writeBeat(id, &Heartbeat{At: time.Unix(int64(step), 0)}) // back before the operator wrote
					}
				}
			case r < 16: // the operator restarts
				recount()
				continue
			case hostile && r == 17: // a hostile device writes a refused record over its own keys
				evil := fmt.Sprint("evil-", rng.IntN(3))
				switch rng.IntN(5) {
				case 0:
					w.raw(true, evil, []byte("\x00junk"))
				case 1: // a record naming another device
					w.raw(true, evil, Encode(DeviceInfo{Version: ContractVersion, ID: id, Labels: map[string]string{"zone": "a"}}))
				case 2:
					w.raw(true, evil, Encode(DeviceInfo{Version: ContractVersion, ID: evil, Labels: map[string]string{"zone": strings.Repeat("a", 64)}}))
				case 3:
					w.raw(false, evil, Encode(Heartbeat{Version: ContractVersion, Lapsed: &DeviceLabels{Labels: map[string]string{"zone a": "x"}}}))
				default:
					w.raw(false, evil, Encode(map[string]any{"v": ContractVersion, "pad": strings.Repeat("p", MaxHeartbeatRecordBytes)}))
				}
				hostileWrites++
			case hostile && r >= 18: // and registers, beats and lapses like any device in between
				evil := fmt.Sprint("evil-", rng.IntN(3))
				if rng.IntN(2) == 0 {
					w.writeDevice(DeviceInfo{ID: evil, Labels: map[string]string{"zone": zones[rng.IntN(len(zones))]}})
					w.relabelLapse(evil)
				} else {
					h := &Heartbeat{At: time.Unix(int64(step), 0)}
					if prev := w.beat(evil); prev != nil && prev.Lapsed != nil {
						h.Replaced = prev.Lapsed
					}
					w.writeBeat(evil, h)
				}
			case r < 17: // the watcher misses one change of a bucket
				if rng.IntN(2) == 0 {
					w.writeDevice(DeviceInfo{ID: id, Labels: map[string]string{"zone": zones[rng.IntN(len(zones))]}})
					devSeen, missed = len(w.devLog), true
				} else {
					w.writeBeat(id, &Heartbeat{})
					beatSeen, missed = len(w.beatLog), true
				}
			}
			failed := false
			for ; devSeen < len(w.devLog) && !failed; devSeen++ {
				if _, err := x.ObserveDevice(w.devLog[devSeen]); err != nil && !refusedOnly(err) {
					if !errors.Is(err, ErrGap) && !errors.Is(err, ErrImpossible) && !errors.Is(err, ErrUnknownRemoval) {
						t.Fatalf("seed %d: %v", seed, err)
					}
					failed = true
				}
			}
			for ; beatSeen < len(w.beatLog) && !failed; beatSeen++ {
				_, err := x.ObserveHeartbeat(w.beatLog[beatSeen])
				if err != nil && !refusedOnly(err) {
					if !errors.Is(err, ErrGap) && !errors.Is(err, ErrImpossible) && !errors.Is(err, ErrUnknownRemoval) {
						t.Fatalf("seed %d: %v", seed, err)
					}
					failed = true
				}
			}
			if failed {
				recount()
			}
			if missed {
				continue
			}
			for _, d := range deps {
				got, ok := x.Select(d.key, d.sel.String(), d.sel)
				if !ok {
					t.Fatalf("seed %d step %d: %s not counted", seed, step, d.key)
				}
				m, s := w.recount(d.sel)
				if got.Matched != m || got.Stale != s {
					t.Fatalf("seed %d step %d: %s: index says %d matched, %d stale; the buckets %d, %d", seed, step, d.key, got.Matched, got.Stale, m, s)
				}
				o, n := w.recountBeats(d.sel)
				if !got.Beats.Known || !got.Beats.Oldest.Equal(o) || !got.Beats.Newest.Equal(n) {
					t.Fatalf("seed %d step %d: %s: index says last heartbeats %v..%v (known %v); the buckets %v..%v", seed, step, d.key, got.Beats.Oldest, got.Beats.Newest, got.Beats.Known, o, n)
				}
				if s > 0 {
					beatsChecked++
				}
			}
		}
	}
	return hostileWrites
}

// refusedOnly says whether err is a refused record that needs no recount.
func refusedOnly(err error) bool {
	var rej *Rejection
	return errors.As(err, &rej) && rej.Recount == nil
}

func TestIndexSelect(t *testing.T) {
	x := &Index{}
	sel := labels.SelectorFromSet(labels.Set{"zone": "a"})
	d := DeploymentKey{Namespace: "ns", Name: "web"}
	if _, ok := x.Select(d, sel.String(), sel); ok {
		t.Fatal("a new selector is counted before a recount")
	}
	select {
	case <-x.RecountWanted():
	default:
		t.Fatal("a new selector does not ask for a recount")
	}
	x.Reset()
	if _, ok := x.Select(d, sel.String(), sel); ok {
		t.Fatal("counted before the initial passes end")
	}
	dev := Encode(DeviceInfo{Version: ContractVersion, ID: "dev-1", Labels: map[string]string{"zone": "a"}})
	if _, err := x.ObserveDevice(Change{Revision: 1, Key: "dev-1", Value: dev}); err != nil {
		t.Fatal(err)
	}
	x.SyncedDevices()
	x.SyncedHeartbeats()
	got, ok := x.Select(d, sel.String(), sel)
	if !ok || got.Matched != 1 || got.Stale != 0 {
		t.Fatalf("Select = %+v, %v; want 1 matched", got, ok)
	}
	if dirty := x.Dirty(); len(dirty) != 1 || dirty[0] != d {
		t.Errorf("Dirty = %v, want %v", dirty, d)
	}
	// A key deleted by hand leaves no labels to count out: the index asks for a recount.
	if _, err := x.ObserveDevice(Change{Revision: 2, Key: "dev-1", Deleted: true}); !errors.Is(err, ErrUnknownRemoval) {
		t.Errorf("a deleted device record: %v, want ErrUnknownRemoval", err)
	}
	// The same selector in another form is a change too.
	other := labels.SelectorFromSet(labels.Set{"zone": "b"})
	if _, ok := x.Select(d, other.String(), other); ok {
		t.Error("a changed selector is counted before a recount")
	}
}
