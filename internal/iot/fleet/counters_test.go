package fleet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// memBucket is an in-memory stand-in for a KV bucket with history 1: every write gets the next revision,
// updates are compare-and-swap on the key's revision, and the log keeps every change in order (what a
// watcher that misses nothing sees).
type memBucket struct {
	rev  uint64
	keys map[string]memEntry
	log  []Change
}

type memEntry struct {
	rev   uint64
	value []byte
}

var errRevision = errors.New("wrong last revision")

func newBucket() *memBucket { return &memBucket{keys: map[string]memEntry{}} }

// write stores value at key when the key's revision is rev (0: the key must not exist).
func (b *memBucket) write(key string, value []byte, rev uint64) error {
	if b.keys[key].rev != rev {
		return errRevision
	}
	b.rev++
	b.keys[key] = memEntry{rev: b.rev, value: value}
	b.log = append(b.log, Change{Revision: b.rev, Key: key, Value: value})
	return nil
}

func (b *memBucket) remove(key string) {
	b.rev++
	delete(b.keys, key)
	b.log = append(b.log, Change{Revision: b.rev, Key: key, Deleted: true})
}

// get is the key's current record and revision.
func (b *memBucket) get(key string) (*State, uint64) {
	e, ok := b.keys[key]
	if !ok {
		return nil, 0
	}
	s, err := DecodeState(e.value)
	if err != nil {
		panic(err)
	}
	return s, e.rev
}

// transition is what a writer does: read, compute the next record, compare-and-swap; on a lost race
// read again. It writes nothing when the record already says so.
func (b *memBucket) transition(key string, gen int64, p Phase, msg string) {
	for {
		cur, rev := b.get(key)
		next := Next(cur, gen, p, msg, time.Unix(int64(b.rev), 0))
		if next == nil {
			return
		}
		if b.write(key, Encode(next), rev) == nil {
			return
		}
	}
}

// initial is what a new watcher sees first: the latest record of each key, in revision order.
func (b *memBucket) initial() []Change {
	var out []Change
	for _, ch := range b.log {
		if e, ok := b.keys[ch.Key]; ok && e.rev == ch.Revision {
			out = append(out, ch)
		}
	}
	return out
}

// recount is the truth: every current record counted once.
func (b *memBucket) recount() map[DeploymentKey]map[int64]PhaseCounts {
	out := map[DeploymentKey]map[int64]PhaseCounts{}
	for key, e := range b.keys {
		d, _, err := ParseStateKey(key)
		if err != nil {
			continue
		}
		s, _ := DecodeState(e.value)
		if !s.Phase.Counted() {
			continue
		}
		if out[d] == nil {
			out[d] = map[int64]PhaseCounts{}
		}
		pc := out[d][s.Generation]
		*pc.slot(s.Phase)++
		out[d][s.Generation] = pc
	}
	return out
}

// count runs a counter from scratch over the bucket, the way the operator starts.
func count(t testing.TB, b *memBucket) *Counters {
	c := &Counters{}
	c.Reset()
	for _, ch := range b.initial() {
		if err := c.Observe(ch); err != nil {
			t.Fatalf("initial pass: %v", err)
		}
	}
	c.Synced()
	return c
}

func assertMatches(t testing.TB, c *Counters, b *memBucket, deps []DeploymentKey) {
	t.Helper()
	want := b.recount()
	for _, d := range deps {
		got := c.Snapshot(d).ByGeneration
		w := want[d]
		if w == nil {
			w = map[int64]PhaseCounts{}
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Fatalf("%s: counters %v, recount %v", d, got, w)
		}
	}
}

var web = DeploymentKey{Namespace: "shop", Name: "web"}

func TestCountersTransitions(t *testing.T) {
	type step struct {
		device string
		gen    int64
		phase  Phase
	}
	tests := []struct {
		name  string
		steps []step
		want  map[int64]PhaseCounts
	}{
		{"first report", []step{{"a", 1, PhasePending}}, map[int64]PhaseCounts{1: {Pending: 1}}},
		{"pending to running", []step{{"a", 1, PhasePending}, {"a", 1, PhaseRunning}}, map[int64]PhaseCounts{1: {Running: 1}}},
		{"a repeated report counts once", []step{{"a", 1, PhaseRunning}, {"a", 1, PhaseRunning}}, map[int64]PhaseCounts{1: {Running: 1}}},
		{"upgrade moves the device to the new generation", []step{{"a", 1, PhaseRunning}, {"b", 1, PhaseRunning}, {"a", 2, PhasePending}},
			map[int64]PhaseCounts{1: {Running: 1}, 2: {Pending: 1}}},
		{"an emptied generation is dropped", []step{{"a", 1, PhaseRunning}, {"a", 2, PhaseRunning}}, map[int64]PhaseCounts{2: {Running: 1}}},
		{"failure and recovery", []step{{"a", 1, PhaseFailed}, {"a", 1, PhaseRunning}, {"b", 1, PhaseFailed}},
			map[int64]PhaseCounts{1: {Running: 1, Failed: 1}}},
		{"withdrawal counts the device out", []step{{"a", 1, PhaseRunning}, {"b", 1, PhaseRunning}, {"a", 1, PhaseRemoved}},
			map[int64]PhaseCounts{1: {Running: 1}}},
		{"a withdrawn device that comes back counts again", []step{{"a", 1, PhaseRunning}, {"a", 1, PhaseRemoved}, {"a", 1, PhasePending}},
			map[int64]PhaseCounts{1: {Pending: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBucket()
			c := count(t, b)
			for _, s := range tt.steps {
				b.transition(StateKey(web, s.device), s.gen, s.phase, "")
			}
			for _, ch := range b.log {
				if err := c.Observe(ch); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.Snapshot(web).ByGeneration; fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("counts = %v, want %v", got, tt.want)
			}
			assertMatches(t, c, b, []DeploymentKey{web})
			// A counter started now, from the bucket's current records, agrees.
			assertMatches(t, count(t, b), b, []DeploymentKey{web})
		})
	}
}

func TestCountersDetectWhatTheyCannotFold(t *testing.T) {
	b := newBucket()
	c := count(t, b)
	b.transition(StateKey(web, "a"), 1, PhaseRunning, "")
	b.transition(StateKey(web, "b"), 1, PhaseRunning, "")
	b.transition(StateKey(web, "b"), 1, PhaseFailed, "boom")

	t.Run("a missed change is a gap", func(t *testing.T) {
		c := count(t, newBucket())
		if err := c.Observe(b.log[0]); err != nil {
			t.Fatal(err)
		}
		if err := c.Observe(b.log[2]); !errors.Is(err, ErrGap) {
			t.Errorf("Observe after a skipped revision = %v, want ErrGap", err)
		}
	})
	t.Run("a transition out of an empty phase is impossible", func(t *testing.T) {
		c := count(t, newBucket())
		c.lastRev = 2 // as if the first two changes had been seen but not counted
		if err := c.Observe(b.log[2]); !errors.Is(err, ErrImpossible) {
			t.Errorf("Observe = %v, want ErrImpossible", err)
		}
	})
	t.Run("a bare delete is an unknown removal", func(t *testing.T) {
		for _, ch := range b.log {
			if err := c.Observe(ch); err != nil {
				t.Fatal(err)
			}
		}
		b.remove(StateKey(web, "a"))
		if err := c.Observe(b.log[len(b.log)-1]); !errors.Is(err, ErrUnknownRemoval) {
			t.Errorf("Observe(delete) = %v, want ErrUnknownRemoval", err)
		}
	})
	t.Run("a forgotten deployment's deletes and late writes are ignored", func(t *testing.T) {
		b := newBucket()
		c := count(t, b)
		b.transition(StateKey(web, "a"), 1, PhaseRunning, "")
		if err := c.Observe(b.log[0]); err != nil {
			t.Fatal(err)
		}
		c.Forget(web)
		b.transition(StateKey(web, "a"), 1, PhaseFailed, "late")
		b.remove(StateKey(web, "a"))
		for _, ch := range b.log[1:] {
			if err := c.Observe(ch); err != nil {
				t.Fatalf("Observe(%+v) = %v", ch, err)
			}
		}
		if got := c.Snapshot(web).ByGeneration; len(got) != 0 {
			t.Errorf("a forgotten deployment has counts %v", got)
		}
		// A new deployment of the same name starts from first records.
		b.transition(StateKey(web, "a"), 1, PhasePending, "")
		if err := c.Observe(b.log[len(b.log)-1]); err != nil {
			t.Fatal(err)
		}
		if got := c.Snapshot(web).ByGeneration[1]; got != (PhaseCounts{Pending: 1}) {
			t.Errorf("re-created deployment counts %v", got)
		}
	})
}

func TestCountersLastErrorAndEvents(t *testing.T) {
	b := newBucket()
	c := count(t, b)
	b.transition(StateKey(web, "a"), 1, PhaseFailed, "pull failed")
	b.transition(StateKey(web, "b"), 1, PhaseFailed, "port in use")
	b.transition(StateKey(web, "a"), 1, PhaseRunning, "")
	for _, ch := range b.log {
		if err := c.Observe(ch); err != nil {
			t.Fatal(err)
		}
	}
	s := c.Snapshot(web)
	if s.LastError == nil || s.LastError.Device != "b" || s.LastError.Message != "port in use" {
		t.Errorf("LastError = %+v, want device b", s.LastError)
	}
	var got []string
	for _, e := range s.Events {
		got = append(got, e.Device+":"+string(e.Phase))
	}
	if fmt.Sprint(got) != "[a:Running b:Failed a:Failed]" {
		t.Errorf("events (newest first) = %v", got)
	}
	for i := range 2 * MaxEvents {
		b.transition(StateKey(web, fmt.Sprint("d", i)), 1, PhaseFailed, "x")
		if err := c.Observe(b.log[len(b.log)-1]); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.Snapshot(web).Events); n != MaxEvents {
		t.Errorf("%d events kept, want %d", n, MaxEvents)
	}
}

// TestCountersRandomInterleavings: devices of several deployments move through random phases and
// generations, writers race with stale reads (an agent restarting from an old revision), the operator
// withdraws devices, and the operator restarts or misses a change now and then. Whatever happens, the
// counters equal a recount of the bucket once every change is folded.
func TestCountersRandomInterleavings(t *testing.T) {
	deps := []DeploymentKey{web, {Namespace: "shop", Name: "db"}, {Namespace: "lab", Name: "web"}}
	phases := []Phase{PhasePending, PhaseRunning, PhaseFailed, PhaseRemoved}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, seed*7+1))
		b := newBucket()
		c := count(t, b)
		seen := 0
		recounts := 0
		// missed is a change the watcher lost and cannot know of until the next one shows the gap.
		missed := false
		for step := range 300 {
			d := deps[rng.IntN(len(deps))]
			key := StateKey(d, fmt.Sprint("dev-", rng.IntN(12)))
			switch r := rng.IntN(20); {
			case r < 14: // a device (or the operator withdrawing it) moves
				b.transition(key, int64(1+rng.IntN(3)), phases[rng.IntN(len(phases))], "")
			case r < 16: // an agent restarts and writes from the revision it had before: it loses the race once
				cur, rev := b.get(key)
				if cur != nil {
					stale := Next(cur, cur.Generation, PhaseFailed, "stale writer", time.Unix(0, 0))
					if stale != nil && b.write(key, Encode(stale), rev-1) == nil && rev > 1 {
						t.Fatalf("a write with a stale revision succeeded")
					}
				}
				b.transition(key, int64(1+rng.IntN(3)), PhaseRunning, "")
			case r < 17: // the operator restarts: one pass over the bucket, then changes from there
				c = count(t, b)
				seen, missed = len(b.log), false
				continue
			case r < 18: // the watcher misses a change
				before := len(b.log)
				b.transition(key, int64(1+rng.IntN(3)), phases[rng.IntN(len(phases))], "missed")
				if len(b.log) > before {
					seen, missed = len(b.log), true
				}
			}
			for ; seen < len(b.log); seen++ {
				if err := c.Observe(b.log[seen]); err != nil {
					// What the operator does: recount, and go on from the end of the log.
					recounts++
					c = count(t, b)
					seen, missed = len(b.log), false
					break
				}
			}
			if step%5 == 4 && !missed {
				assertMatches(t, c, b, deps)
			}
		}
		if !missed {
			assertMatches(t, c, b, deps)
		}
		if recounts == 0 {
			t.Errorf("seed %d: no missed change was detected; the test does not exercise the recount", seed)
		}
	}
}

// BenchmarkCounters folds the transitions of a fleet of N devices (each Pending, Running, then upgraded
// to generation 2) and reports the counters' entries and the heap they keep: the same at 10,000 and at
// 100,000 devices, since the counters remember no device.
func BenchmarkCounters(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			var c *Counters
			var before, after runtime.MemStats
			for range b.N {
				runtime.GC()
				runtime.ReadMemStats(&before)
				c = &Counters{}
				c.Reset()
				c.Synced()
				rev := uint64(0)
				var last [2]*State // the chain of the device in hand; devices are independent
				observe := func(key string, s *State) {
					rev++
					if err := c.Observe(Change{Revision: rev, Key: key, Value: Encode(s)}); err != nil {
						b.Fatal(err)
					}
				}
				at := time.Unix(0, 0)
				for i := range n {
					key := StateKey(web, fmt.Sprint("dev-", i))
					last[0] = Next(nil, 1, PhasePending, "", at)
					observe(key, last[0])
					last[1] = Next(last[0], 1, PhaseRunning, "", at)
					observe(key, last[1])
					observe(key, Next(last[1], 2, PhaseRunning, "", at))
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
			}
			if got := c.Snapshot(web).ByGeneration[2].Running; got != int64(n) {
				b.Fatalf("running at generation 2 = %d, want %d", got, n)
			}
			b.ReportMetric(float64(c.Entries()), "counters")
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "retained-heap-bytes")
			b.ReportMetric(float64(3*n)/b.Elapsed().Seconds()*float64(b.N), "transitions/s")
		})
	}
}

// recountInto is the operator's recount with the same counters (their quarantine survives it): Reset,
// the bucket's current records, Synced. Refused records count nowhere; nothing else may fail.
func recountInto(t testing.TB, c *Counters, b *memBucket) {
	t.Helper()
	c.Reset()
	for _, ch := range b.initial() {
		if err := c.Observe(ch); err != nil {
			var rej *Rejection
			if !errors.As(err, &rej) || rej.Recount != nil {
				t.Fatalf("initial pass: %v", err)
			}
		}
	}
	c.Synced()
}

// hostileTruth is what the counters must say of deployment d: every key not quarantined whose current
// record the contract accepts, counted once in its phase.
func hostileTruth(c *Counters, b *memBucket, d DeploymentKey) map[int64]PhaseCounts {
	out := map[int64]PhaseCounts{}
	for key, e := range b.keys {
		kd, _, err := ParseStateKey(key)
		if err != nil || kd != d || c.IsQuarantined(key) {
			continue
		}
		s, err := DecodeState(e.value)
		if err != nil || !s.Phase.Counted() {
			continue
		}
		pc := out[s.Generation]
		*pc.slot(s.Phase)++
		out[s.Generation] = pc
	}
	return out
}

// agentWrite is what an agent does, also one that wrote junk before: read the current record (an
// unreadable one as none), write the next with compare-and-swap.
func (b *memBucket) agentWrite(key string, gen int64, p Phase) {
	e := b.keys[key]
	cur, err := DecodeState(e.value)
	if err != nil {
		cur = nil
	}
	if next := Next(cur, gen, p, "", time.Unix(int64(b.rev), 0)); next != nil {
		if err := b.write(key, Encode(next), e.rev); err != nil {
			panic(err)
		}
	}
}

// junk is a record the contract refuses, of each kind a hostile device can write.
func junk(rng *rand.Rand) []byte {
	switch rng.IntN(5) {
	case 0:
		return []byte("\x00not json")
	case 1:
		return Encode(State{Version: ContractVersion, Generation: 1, Phase: PhaseRunning, Message: strings.Repeat("x", MaxStateRecordBytes)})
	case 2:
		return Encode(State{Version: ContractVersion + 1, Generation: 1, Phase: PhaseRunning})
	case 3:
		return Encode(State{Version: ContractVersion, Generation: 0, Phase: PhaseRunning})
	default:
		return Encode(State{Version: ContractVersion, Generation: MaxGeneration + 1, Phase: PhaseRunning, PrevGeneration: 1, PrevPhase: PhaseRunning})
	}
}

// TestCountersHostileDevices: honest devices move as in TestCountersRandomInterleavings (with lost
// changes and operator restarts) while hostile devices, each writing only keys that name itself, write
// undecodable, oversized, other-version and out-of-bounds records, records under keys outside the
// contract, agent-like chains over their own junk, and, in a deployment of their own, records whose
// previous state is forged. After every step the honest deployments' counters equal a recount of their
// keys (quarantined keys aside), no honest key is ever quarantined, and no refused record moves a count.
func TestCountersHostileDevices(t *testing.T) {
	honest := []DeploymentKey{web, {Namespace: "shop", Name: "db"}}
	forged := DeploymentKey{Namespace: "lab", Name: "forged"}
	phases := []Phase{PhasePending, PhaseRunning, PhaseFailed, PhaseRemoved}
	reasons := map[string]int{}
	quarantines, releases := 0, 0
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, seed*11+5))
		b := newBucket()
		c := &Counters{}
		recountInto(t, c, b)
		seen, missed := 0, false
		honestKey := func() string {
			return StateKey(honest[rng.IntN(len(honest))], fmt.Sprint("dev-", rng.IntN(8)))
		}
		hostileKey := func(d DeploymentKey) string { return StateKey(d, fmt.Sprint("evil-", rng.IntN(3))) }
		for step := range 300 {
			switch r := rng.IntN(24); {
			case r < 10: // an honest device (or the operator withdrawing it) moves
				b.transition(honestKey(), int64(1+rng.IntN(3)), phases[rng.IntN(len(phases))], "")
			case r < 11: // the operator restarts
				recountInto(t, c, b)
				seen, missed = len(b.log), false
				continue
			case r < 12: // the watcher misses an honest change
				before := len(b.log)
				b.transition(honestKey(), int64(1+rng.IntN(3)), phases[rng.IntN(len(phases))], "missed")
				if len(b.log) > before {
					seen, missed = len(b.log), true
				}
			case r < 15: // a hostile device writes junk over its own key in an honest deployment
				key := hostileKey(honest[rng.IntN(len(honest))])
				_ = b.write(key, junk(rng), b.keys[key].rev)
			case r < 16: // a record under a key outside the contract
				key := []string{"shop.web", "shop.web.evil-0.x", "shop..evil-0", "shop.web.evil 0"}[rng.IntN(4)]
				_ = b.write(key, Encode(Next(nil, 1, PhaseRunning, "", time.Unix(0, 0))), b.keys[key].rev)
			case r < 19: // a hostile device writes an agent-like chain over whatever it wrote before
				b.agentWrite(hostileKey(honest[rng.IntN(len(honest))]), int64(1+rng.IntN(3)), phases[rng.IntN(len(phases))])
			default: // in its own deployment, a record with a forged previous state, or junk
				key := hostileKey(forged)
				v := junk(rng)
				if rng.IntN(3) > 0 {
					s := Next(nil, int64(1+rng.IntN(3)), phases[rng.IntN(3)], "", time.Unix(0, 0))
					if rng.IntN(4) > 0 {
						s.PrevGeneration, s.PrevPhase = int64(1+rng.IntN(3)), phases[rng.IntN(3)]
					}
					v = Encode(s)
				}
				_ = b.write(key, v, b.keys[key].rev)
			}
			for ; seen < len(b.log); seen++ {
				ch := b.log[seen]
				before := fmt.Sprint(c.Snapshot(honest[0]).ByGeneration, c.Snapshot(honest[1]).ByGeneration)
				wasQuarantined := c.IsQuarantined(ch.Key)
				err := c.Observe(ch)
				if !wasQuarantined && c.IsQuarantined(ch.Key) {
					quarantines++
				}
				if wasQuarantined && !c.IsQuarantined(ch.Key) {
					releases++
				}
				var rej *Rejection
				if errors.As(err, &rej) {
					reasons[rej.Reason]++
					if rej.Recount == nil {
						if after := fmt.Sprint(c.Snapshot(honest[0]).ByGeneration, c.Snapshot(honest[1]).ByGeneration); after != before {
							t.Fatalf("seed %d step %d: a refused record moved the counts: %s to %s", seed, step, before, after)
						}
						continue
					}
				}
				if err != nil {
					recountInto(t, c, b)
					seen, missed = len(b.log), false
					break
				}
			}
			for i := range 8 {
				if key := StateKey(honest[i%2], fmt.Sprint("dev-", i)); c.IsQuarantined(key) {
					t.Fatalf("seed %d step %d: honest key %s quarantined", seed, step, key)
				}
			}
			if missed {
				continue
			}
			for _, d := range honest {
				if got, want := fmt.Sprint(c.Snapshot(d).ByGeneration), fmt.Sprint(hostileTruth(c, b, d)); got != want {
					t.Fatalf("seed %d step %d: %s: counters %s, recount %s", seed, step, d, got, want)
				}
			}
		}
	}
	for _, r := range RejectReasons {
		// Untargeted records are refused by the store's fold before the counters (TestUntargetedState).
		if reasons[r] == 0 && r != ReasonUntargeted {
			t.Errorf("no record was refused as %s: the test does not exercise it", r)
		}
	}
	if quarantines == 0 || releases == 0 {
		t.Errorf("%d quarantines, %d releases: the test does not exercise the quarantine", quarantines, releases)
	}
	t.Logf("refused %v; %d quarantines, %d releases", reasons, quarantines, releases)
}

// TestCountersObserveHeld: records a caller held back (Passed when they came) and folds later, before
// the change that decided them (a withdrawn device's records, then its Removed record), leave the
// counts as folding them in place would, whether the first was read live or in the initial pass; the
// revisions after them stay in step. The control: Passed and never folded, the Removed record takes the
// other device out and the leaver stays counted in generation 1 (issue 34's last bug).
func TestCountersObserveHeld(t *testing.T) {
	want := fmt.Sprint(map[int64]PhaseCounts{2: {Running: 1}})
	for _, initial := range []bool{false, true} {
		t.Run(fmt.Sprintf("first held in the initial pass %v", initial), func(t *testing.T) {
			b := newBucket()
			stay, leave := StateKey(web, "stay"), StateKey(web, "leave")
			for _, k := range []string{stay, leave} {
				b.transition(k, 1, PhaseRunning, "")
			}
			b.transition(stay, 2, PhasePending, "")
			b.transition(stay, 2, PhaseRunning, "")
			var c, bug *Counters
			if !initial {
				c, bug = count(t, b), count(t, b)
			}
			b.transition(leave, 2, PhasePending, "") // held: read after the withdrawal
			held := []Change{b.log[len(b.log)-1]}
			if initial { // the watch starts now: the leaver's Pending record is its current one
				c, bug = &Counters{}, &Counters{}
				for _, x := range []*Counters{c, bug} {
					x.Reset()
					for _, ch := range b.initial() {
						var err error
						if ch.Key == leave {
							err = x.Pass(ch.Revision)
						} else {
							err = x.Observe(ch)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					x.Synced()
				}
			} else {
				for _, x := range []*Counters{c, bug} {
					if err := x.Pass(b.rev); err != nil {
						t.Fatal(err)
					}
				}
			}
			b.transition(leave, 2, PhaseRunning, "") // held too
			held = append(held, b.log[len(b.log)-1])
			for _, x := range []*Counters{c, bug} {
				if err := x.Pass(b.rev); err != nil {
					t.Fatal(err)
				}
			}
			b.transition(leave, 2, PhaseRemoved, "withdrawn")
			removed := b.log[len(b.log)-1]

			if err := bug.Observe(removed); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(bug.Snapshot(web).ByGeneration); got == want {
				t.Fatalf("the control: the held records never folded, the counts are right all the same (%s)", got)
			}

			for i, ch := range held {
				if err := c.ObserveHeld(ch, initial && i == 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Observe(removed); err != nil {
				t.Fatalf("the Removed record after the held ones: %v", err)
			}
			assertMatches(t, c, b, []DeploymentKey{web})
			if got := fmt.Sprint(c.Snapshot(web).ByGeneration); got != want {
				t.Errorf("counts %s, want %s (the stayer alone)", got, want)
			}
			b.transition(stay, 3, PhasePending, "")
			if err := c.Observe(b.log[len(b.log)-1]); err != nil {
				t.Errorf("the next change after the held ones: %v", err)
			}
		})
	}
}
