package fleet

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Errors after which the counters no longer match the state bucket: the caller recounts (Reset, then one
// pass over the bucket).
var (
	// ErrGap is a change whose revision does not follow the last one seen: a change was missed.
	ErrGap = errors.New("fleet counters: a gap in the state bucket's revisions")
	// ErrImpossible is a transition out of a phase no device is counted in.
	ErrImpossible = errors.New("fleet counters: a transition out of a phase whose count is zero")
	// ErrUnknownRemoval is a state key deleted without a Removed record first: which phase it left is
	// not known.
	ErrUnknownRemoval = errors.New("fleet counters: a state record deleted without being withdrawn")
)

// MaxEvents is how many recent fleet events the counters keep per deployment.
const MaxEvents = 10

// MaxQuarantined is how many state keys the counters quarantine at once (and how many offenders they
// remember): the counters' only memory of single devices, and it is bounded. Beyond it, an offender is
// not quarantined and costs recounts, which the fold rate-limits.
const MaxQuarantined = 1024

// ReleaseAfter is how many consistent records in a row (each naming as previous exactly the record
// before it) a quarantined key writes before it counts again.
const ReleaseAfter = 2

// Rejection is a record the counters or the index refused (docs/fleet.md, "Bad input"): it moved no
// count. Key is where it was written; Device and Deployment are what the key names (empty when the key
// names none). Recount is set when the counts can no longer be trusted without a recount (a refused
// record replaced one the counters had counted), and is what errors.Is sees.
type Rejection struct {
	Records    string
	Key        string
	Device     string
	Deployment DeploymentKey
	Reason     string
	Err        error
	Recount    error
	// Quarantined says the counters quarantined the key with this record.
	Quarantined bool
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("refused the %s record at %q (%s): %v", r.Records, clip(r.Key), r.Reason, r.Err)
}

// Unwrap is the recount the rejection calls for, if any.
func (r *Rejection) Unwrap() error { return r.Recount }

// rejection builds the Rejection of a record refused on decode.
func rejection(records, key string, err error) *Rejection {
	rej := &Rejection{Records: records, Key: key, Reason: ReasonDecode, Err: err}
	var re *RecordError
	if errors.As(err, &re) {
		rej.Reason, rej.Err = re.Reason, re.Err
	}
	return rej
}

// KeyError is a change the counters could not fold because of one key: an impossible transition or a
// removal without a Removed record. Quarantined says the key is quarantined from now on (it kept
// causing them). It wraps ErrImpossible or ErrUnknownRemoval.
type KeyError struct {
	Key         string
	Device      string
	Deployment  DeploymentKey
	Quarantined bool
	Err         error
}

func (e *KeyError) Error() string {
	if e.Quarantined {
		return e.Err.Error() + " (key quarantined)"
	}
	return e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }

// quarantined is what the counters know of a quarantined key: its current record (nil: none or
// refused), exactly, since they see every revision, and how many consistent records it wrote in a row.
type quarantined struct {
	last   *State
	streak int
}

// Change is one entry of a watch over BucketState: the key, the entry's revision (the stream sequence,
// which grows by one per write to the bucket), and the value, or Deleted for a delete or purge marker.
type Change struct {
	Revision uint64
	Key      string
	Deleted  bool
	Value    []byte
}

// PhaseCounts are the devices in each counted phase for one generation.
type PhaseCounts struct {
	Pending, Running, Failed int64
}

func (c *PhaseCounts) slot(p Phase) *int64 {
	switch p {
	case PhasePending:
		return &c.Pending
	case PhaseRunning:
		return &c.Running
	case PhaseFailed:
		return &c.Failed
	}
	return nil
}

func (c PhaseCounts) total() int64 { return c.Pending + c.Running + c.Failed }

// Event is one device's notable transition: into Failed, or out of Failed.
type Event struct {
	At         time.Time
	Device     string
	Generation int64
	Phase      Phase
	Message    string
}

// Snapshot is what the counters know of one deployment.
type Snapshot struct {
	// ByGeneration are the devices per phase, for each generation some device reports.
	ByGeneration map[int64]PhaseCounts
	// LastError is the newest transition into Failed, if any.
	LastError *Event
	// Events are the newest notable transitions, newest first.
	Events []Event
}

// Counters keep, per deployment, generation and phase, how many devices are in that phase, moved by
// each state transition (previous phase -1, new phase +1). Their memory grows with deployments and the
// generations devices report, never with devices. They are safe for concurrent use.
//
// Use: Reset, Observe every entry of a watch over BucketState up to the end of its initial values,
// Synced, then Observe each later change. An error from Observe means the counts may be wrong: Reset
// and start again.
type Counters struct {
	mu        sync.Mutex
	live      bool
	lastRev   uint64
	deps      map[DeploymentKey]*deployment
	forgotten map[DeploymentKey]struct{}
	dirty     map[DeploymentKey]struct{}
	recounts  int
	// quarantine holds the keys whose records count nowhere until they write a consistent chain;
	// offenders the keys that caused an impossible transition once. Both survive Reset and are bounded
	// by MaxQuarantined.
	quarantine map[string]*quarantined
	offenders  map[string]struct{}
}

type deployment struct {
	gens      map[int64]*PhaseCounts
	lastError *Event
	events    []Event // newest last, at most MaxEvents
	// oldest is the oldest "at" of the records folded live since the last TakeOldest (zero: none).
	oldest time.Time
}

// Reset forgets every count: the start of a (re)count.
func (c *Counters) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deps != nil {
		c.recounts++
	}
	for k := range c.deps {
		c.markDirty(k)
	}
	c.live, c.lastRev = false, 0
	c.deps = map[DeploymentKey]*deployment{}
	c.forgotten = map[DeploymentKey]struct{}{}
}

// Recounts is how many times the counters were reset after the first count.
func (c *Counters) Recounts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recounts
}

// Synced ends the initial pass: from now on each change moves the counts, and revisions must follow
// each other.
func (c *Counters) Synced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = true
}

// Forget drops a deleted deployment's counts. Later changes of its keys are ignored, except a first
// record (no previous phase), which starts a new deployment of the same name.
func (c *Counters) Forget(d DeploymentKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.deps, d)
	delete(c.dirty, d)
	prefix := d.Namespace + "." + d.Name + "."
	for k := range c.quarantine {
		if strings.HasPrefix(k, prefix) {
			delete(c.quarantine, k)
		}
	}
	if c.forgotten == nil {
		c.forgotten = map[DeploymentKey]struct{}{}
	}
	c.forgotten[d] = struct{}{}
}

// Pass notes that the change of revision rev was seen and counts nowhere (a record the caller refused
// before folding it, ReasonUntargeted), so that the next change does not look like a gap. It is
// ErrGap when rev itself does not follow the last revision.
func (c *Counters) Pass(rev uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live && c.lastRev != 0 && rev != c.lastRev+1 {
		return fmt.Errorf("%w: revision %d after %d", ErrGap, rev, c.lastRev)
	}
	c.lastRev = max(c.lastRev, rev)
	return nil
}

// Observe folds one change into the counts. Before Synced it counts the record as the key's current
// state; after, it moves the record's previous phase to its new one.
func (c *Counters) Observe(ch Change) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live {
		if c.lastRev != 0 && ch.Revision != c.lastRev+1 {
			return fmt.Errorf("%w: revision %d after %d", ErrGap, ch.Revision, c.lastRev)
		}
	}
	c.lastRev = max(c.lastRev, ch.Revision)
	return c.fold(ch, c.live)
}

// ObserveHeld folds a change the caller held back when it came (and Passed then, so that the revisions
// stayed in step): a record the caller could not judge yet, folded once it could, before the change
// that decided it. Its revision is not checked against the last one. asCurrent folds it as the initial
// pass does (the key's current record, its previous phase ignored): the caller read it in its initial
// pass.
func (c *Counters) ObserveHeld(ch Change, asCurrent bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fold(ch, c.live && !asCurrent)
}

// fold folds one change: live moves its previous phase to its new one, otherwise it counts the record as
// the key's current state.
func (c *Counters) fold(ch Change, live bool) error {
	if c.deps == nil {
		c.deps = map[DeploymentKey]*deployment{}
	}
	d, device, err := ParseStateKey(ch.Key)
	if err != nil {
		return &Rejection{Records: RecordsState, Key: ch.Key, Reason: ReasonForeign, Err: errors.New("not a key <namespace>.<name>.<device>")}
	}
	if q := c.quarantine[ch.Key]; q != nil {
		return c.observeQuarantined(q, ch, d, device, live)
	}
	if ch.Deleted {
		_, gone := c.forgotten[d]
		if !live || gone {
			return nil
		}
		if _, known := c.deps[d]; !known {
			return nil
		}
		return c.offend(ch.Key, d, device, fmt.Errorf("%w: %s", ErrUnknownRemoval, ch.Key))
	}
	s, err := DecodeState(ch.Value)
	if err != nil {
		rej := rejection(RecordsState, ch.Key, err)
		rej.Device, rej.Deployment = device, d
		if _, gone := c.forgotten[d]; live && !gone && c.deps[d] != nil {
			// The refused record replaced one that may be counted, in a phase nobody knows now: the
			// key counts nowhere until it writes a consistent chain, and the others are recounted.
			rej.Quarantined = c.quarantineKey(ch.Key, nil)
			rej.Recount = fmt.Errorf("%w: %s replaced by a refused record", ErrUnknownRemoval, ch.Key)
		}
		return rej
	}
	if _, gone := c.forgotten[d]; gone {
		if live && s.PrevPhase != PhaseNone {
			return nil
		}
		delete(c.forgotten, d)
	}
	dep := c.deps[d]
	if dep == nil {
		dep = &deployment{gens: map[int64]*PhaseCounts{}}
		c.deps[d] = dep
	}
	if live && s.PrevPhase.Counted() {
		pc := dep.gens[s.PrevGeneration]
		if pc == nil || *pc.slot(s.PrevPhase) == 0 {
			return c.offend(ch.Key, d, device, fmt.Errorf("%w: %s leaves %s of generation %d", ErrImpossible, ch.Key, s.PrevPhase, s.PrevGeneration))
		}
		*pc.slot(s.PrevPhase)--
		if pc.total() == 0 {
			delete(dep.gens, s.PrevGeneration)
		}
	}
	c.count(dep, d, device, s, live)
	return nil
}

// count adds s to its phase and notes it.
func (c *Counters) count(dep *deployment, d DeploymentKey, device string, s *State, live bool) {
	if s.Phase.Counted() {
		pc := dep.gens[s.Generation]
		if pc == nil {
			pc = &PhaseCounts{}
			dep.gens[s.Generation] = pc
		}
		*pc.slot(s.Phase)++
	}
	dep.note(device, s, live)
	if live && !s.At.IsZero() && (dep.oldest.IsZero() || s.At.Before(dep.oldest)) {
		dep.oldest = s.At
	}
	c.markDirty(d)
}

// offend reports a key that made a change impossible to fold: the first time it is remembered, the
// second time it is quarantined (it keeps causing them).
func (c *Counters) offend(key string, d DeploymentKey, device string, err error) error {
	ke := &KeyError{Key: key, Device: device, Deployment: d, Err: err}
	if _, again := c.offenders[key]; again {
		delete(c.offenders, key)
		ke.Quarantined = c.quarantineKey(key, nil)
		return ke
	}
	if c.offenders == nil || len(c.offenders) >= MaxQuarantined {
		c.offenders = map[string]struct{}{}
	}
	c.offenders[key] = struct{}{}
	return ke
}

// quarantineKey quarantines key with its current record last, unless the quarantine is full.
func (c *Counters) quarantineKey(key string, last *State) bool {
	if c.quarantine == nil {
		c.quarantine = map[string]*quarantined{}
	}
	if len(c.quarantine) >= MaxQuarantined {
		return false
	}
	c.quarantine[key] = &quarantined{last: last}
	return true
}

// observeQuarantined follows a quarantined key: its records count nowhere, but the counters keep its
// current record, so that once it wrote ReleaseAfter consistent records in a row they count it again in
// exactly its current phase. A recount's initial pass restarts the streak.
func (c *Counters) observeQuarantined(q *quarantined, ch Change, d DeploymentKey, device string, live bool) error {
	if ch.Deleted {
		q.last, q.streak = nil, 0
		return nil
	}
	s, err := DecodeState(ch.Value)
	if err != nil {
		q.last, q.streak = nil, 0
		rej := rejection(RecordsState, ch.Key, err)
		rej.Device, rej.Deployment = device, d
		return rej
	}
	consistent := live && (q.last == nil && s.PrevPhase == PhaseNone ||
		q.last != nil && s.PrevPhase == q.last.Phase && s.PrevGeneration == q.last.Generation)
	q.last = s
	if !consistent {
		q.streak = 0
		return nil
	}
	if q.streak++; q.streak < ReleaseAfter {
		return nil
	}
	delete(c.quarantine, ch.Key)
	if _, gone := c.forgotten[d]; gone {
		return nil
	}
	dep := c.deps[d]
	if dep == nil {
		dep = &deployment{gens: map[int64]*PhaseCounts{}}
		c.deps[d] = dep
	}
	c.count(dep, d, device, s, live)
	return nil
}

// Quarantined is how many state keys are quarantined now.
func (c *Counters) Quarantined() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.quarantine)
}

// IsQuarantined says whether a state key is quarantined.
func (c *Counters) IsQuarantined(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.quarantine[key] != nil
}

// TakeOldest returns, and clears, the oldest "at" of the records of deployment d folded since the last
// call (zero: none): what the status written next shows for the first time.
func (c *Counters) TakeOldest(d DeploymentKey) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	dep := c.deps[d]
	if dep == nil {
		return time.Time{}
	}
	t := dep.oldest
	dep.oldest = time.Time{}
	return t
}

// note keeps the newest failure and the notable transitions.
func (dep *deployment) note(device string, s *State, live bool) {
	ev := Event{At: s.At, Device: device, Generation: s.Generation, Phase: s.Phase, Message: s.Message}
	if s.Phase == PhaseFailed && (dep.lastError == nil || !s.At.Before(dep.lastError.At)) {
		e := ev
		dep.lastError = &e
	}
	notable := s.Phase == PhaseFailed || (live && s.PrevPhase == PhaseFailed && s.Phase == PhaseRunning)
	if !notable {
		return
	}
	dep.events = append(dep.events, ev)
	if len(dep.events) > MaxEvents {
		dep.events = append(dep.events[:0], dep.events[len(dep.events)-MaxEvents:]...)
	}
}

func (c *Counters) markDirty(d DeploymentKey) {
	if c.dirty == nil {
		c.dirty = map[DeploymentKey]struct{}{}
	}
	c.dirty[d] = struct{}{}
}

// Dirty returns, and clears, the deployments whose counts changed since the last call.
func (c *Counters) Dirty() []DeploymentKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]DeploymentKey, 0, len(c.dirty))
	for d := range c.dirty {
		out = append(out, d)
	}
	clear(c.dirty)
	return out
}

// Live says whether the initial pass is over, so that the counts are the bucket's.
func (c *Counters) Live() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// Snapshot copies what the counters know of deployment d.
func (c *Counters) Snapshot(d DeploymentKey) Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{ByGeneration: map[int64]PhaseCounts{}}
	dep := c.deps[d]
	if dep == nil {
		return s
	}
	for g, pc := range dep.gens {
		s.ByGeneration[g] = *pc
	}
	if dep.lastError != nil {
		e := *dep.lastError
		s.LastError = &e
	}
	for i := len(dep.events) - 1; i >= 0; i-- {
		s.Events = append(s.Events, dep.events[i])
	}
	return s
}

// Entries is how many counters the deployments hold together: what the counters' memory grows with.
func (c *Counters) Entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, dep := range c.deps {
		n += len(dep.gens)
	}
	return n
}
