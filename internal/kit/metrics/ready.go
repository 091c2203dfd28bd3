package metrics

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conditionReady is the condition every API sums its parts up in.
const conditionReady = "Ready"

// readyTracker times, per object of one kind, how long each generation takes to become Ready
// (platform_operator_ready_duration_seconds). It holds one small entry per live object it has seen
// reconciled: the entry is made by the reconcile wrapper (see) and dropped by it when the object is
// gone (forget), so its memory is bounded by the objects of the kind. The collector, which reads every
// object at each scrape, and the wrapper both call observe: the controllers do not reconcile again after
// their own status write (they filter status-only updates), so the scrape is what usually sees Ready.
type readyTracker struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*readyEntry
}

// readyEntry is one object's current generation: when it started and whether its Ready was observed.
type readyEntry struct {
	uid        types.UID
	generation int64
	start      time.Time
	done       bool
}

func newReadyTracker() *readyTracker {
	return &readyTracker{entries: map[types.NamespacedName]*readyEntry{}}
}

// readyAt says whether obj's Ready condition is True for obj's current generation, and the condition.
func readyAt(obj client.Object, st Status) (bool, *metav1.Condition) {
	c := meta.FindStatusCondition(st.Conditions, conditionReady)
	if c == nil {
		return false, nil
	}
	observed := c.ObservedGeneration
	if observed == 0 {
		observed = st.ObservedGeneration
	}
	return c.Status == metav1.ConditionTrue && observed == obj.GetGeneration(), c
}

// see records obj as a reconcile sees it at now: a new object or a new generation starts an entry. The
// start of generation 1 is the object's creation. A later generation starts when first seen, except
// that an object first seen not Ready (the operator restarted) starts when its Ready last turned not
// True, the best lower bound there is. An object first seen already Ready for its generation is not
// observed: its transition happened before the operator could see it.
func (t *readyTracker) see(obj client.Object, st Status, now time.Time) {
	key := client.ObjectKeyFromObject(obj)
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[key]
	if ok && e.uid == obj.GetUID() && e.generation == obj.GetGeneration() {
		return
	}
	known := ok && e.uid == obj.GetUID()
	ready, c := readyAt(obj, st)
	n := &readyEntry{uid: obj.GetUID(), generation: obj.GetGeneration(), start: now}
	switch {
	case !known && ready:
		n.done = true
	case obj.GetGeneration() <= 1 && !obj.GetCreationTimestamp().Time.IsZero():
		n.start = obj.GetCreationTimestamp().Time
	case !known && c != nil && c.Status != metav1.ConditionTrue && !c.LastTransitionTime.IsZero():
		n.start = c.LastTransitionTime.Time
	}
	t.entries[key] = n
}

// observe records the duration of obj's current generation once its Ready is True for it: from the
// entry's start to the Ready condition's lastTransitionTime, or to now when Ready stayed True through the
// generation change (its transition time is then older than the start). Objects without an entry (not
// yet reconciled by this process) are left to see.
func (t *readyTracker) observe(kind string, obj client.Object, st Status, now time.Time) {
	ready, c := readyAt(obj, st)
	if !ready {
		return
	}
	key := client.ObjectKeyFromObject(obj)
	t.mu.Lock()
	e, ok := t.entries[key]
	if !ok || e.done || e.uid != obj.GetUID() || e.generation != obj.GetGeneration() {
		t.mu.Unlock()
		return
	}
	e.done = true
	start := e.start
	t.mu.Unlock()
	end := c.LastTransitionTime.Time
	if end.Before(start) {
		end = now
	}
	readyDuration.WithLabelValues(kind).Observe(max(end.Sub(start), 0).Seconds())
}

// forget drops the entry of an object that is gone.
func (t *readyTracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, key)
}

// len is how many objects the tracker holds, for tests.
func (t *readyTracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}
