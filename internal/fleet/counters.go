package fleet

import (
	"errors"
	"fmt"
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
}

type deployment struct {
	gens      map[int64]*PhaseCounts
	lastError *Event
	events    []Event // newest last, at most MaxEvents
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
	if c.forgotten == nil {
		c.forgotten = map[DeploymentKey]struct{}{}
	}
	c.forgotten[d] = struct{}{}
}

// Observe folds one change into the counts. Before Synced it counts the record as the key's current
// state; after, it moves the record's previous phase to its new one.
func (c *Counters) Observe(ch Change) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deps == nil {
		c.deps = map[DeploymentKey]*deployment{}
	}
	if c.live {
		if c.lastRev != 0 && ch.Revision != c.lastRev+1 {
			return fmt.Errorf("%w: revision %d after %d", ErrGap, ch.Revision, c.lastRev)
		}
	}
	c.lastRev = max(c.lastRev, ch.Revision)

	d, device, err := ParseStateKey(ch.Key)
	if err != nil {
		return nil // not a key of the contract: not ours to count
	}
	if ch.Deleted {
		_, gone := c.forgotten[d]
		if !c.live || gone {
			return nil
		}
		if _, known := c.deps[d]; !known {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrUnknownRemoval, ch.Key)
	}
	s, err := DecodeState(ch.Value)
	if err != nil {
		return nil // a record the contract does not know counts nowhere; the agent logs its own errors
	}
	if _, gone := c.forgotten[d]; gone {
		if c.live && s.PrevPhase != PhaseNone {
			return nil
		}
		delete(c.forgotten, d)
	}
	dep := c.deps[d]
	if dep == nil {
		dep = &deployment{gens: map[int64]*PhaseCounts{}}
		c.deps[d] = dep
	}
	if c.live && s.PrevPhase.Counted() {
		pc := dep.gens[s.PrevGeneration]
		if pc == nil || *pc.slot(s.PrevPhase) == 0 {
			return fmt.Errorf("%w: %s leaves %s of generation %d", ErrImpossible, ch.Key, s.PrevPhase, s.PrevGeneration)
		}
		*pc.slot(s.PrevPhase)--
		if pc.total() == 0 {
			delete(dep.gens, s.PrevGeneration)
		}
	}
	if s.Phase.Counted() {
		pc := dep.gens[s.Generation]
		if pc == nil {
			pc = &PhaseCounts{}
			dep.gens[s.Generation] = pc
		}
		*pc.slot(s.Phase)++
	}
	dep.note(device, s, c.live)
	c.markDirty(d)
	return nil
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
