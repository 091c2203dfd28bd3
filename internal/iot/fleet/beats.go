package fleet

import "time"

// BeatStep is the step the index rounds the stale devices' last heartbeats down to: the status'
// heartbeat times change at most once a step, never with each heartbeat.
const BeatStep = time.Minute

// MaxBeatSteps bounds the steps the index keeps per selection: past it, the step doubles (and the
// times it gives are rounded down to the doubled step), so that a selection costs at most
// MaxBeatSteps counters however many devices went silent, and however far apart.
const MaxBeatSteps = 1024

// BeatRange is what the index knows of the last heartbeats of a selection's stale devices.
type BeatRange struct {
	// Oldest and Newest are the step of the oldest and the newest last heartbeat of a stale device
	// (zero when none is stale, or when Known is false).
	Oldest, Newest time.Time
	// Step is the rounding of Oldest and Newest: BeatStep, or a power-of-two multiple of it.
	Step time.Duration
	// Known is false while a stale device's last heartbeat is unknown to the index (a lapsed record
	// without it, a returning heartbeat that did not carry it back, or one that named a step the index
	// counts no device in), until the next recount.
	Known bool
}

// beatSteps counts the stale devices of one selection by the step of their last heartbeat. It knows no
// device: a lapsed record adds its device to the step of its lastBeat, the record that replaces it
// (the agent's return, or the operator's relabelled lapse) names the same lastBeat and takes it out.
type beatSteps struct {
	step    int64           // seconds; 0 until first used (BeatStep)
	counts  map[int64]int64 // step start in Unix seconds -> stale devices
	unknown bool
}

func (b *beatSteps) key(t time.Time) int64 {
	if b.step == 0 {
		b.step = int64(BeatStep / time.Second)
	}
	s := t.Unix()
	return s - ((s%b.step)+b.step)%b.step
}

// add counts one stale device whose last heartbeat was at (nil: unknown).
func (b *beatSteps) add(at *time.Time) {
	if at == nil {
		b.unknown = true
		return
	}
	if b.counts == nil {
		b.counts = map[int64]int64{}
	}
	b.counts[b.key(*at)]++
	for len(b.counts) > MaxBeatSteps {
		b.coarsen()
	}
}

// remove takes one stale device out, whose last heartbeat was at (nil: unknown).
func (b *beatSteps) remove(at *time.Time) {
	if at == nil {
		b.unknown = true
		return
	}
	k := b.key(*at)
	switch n := b.counts[k]; {
	case n <= 0:
		b.unknown = true // not a step a device was counted in: which one left is not known
	case n == 1:
		delete(b.counts, k)
	default:
		b.counts[k] = n - 1
	}
}

// coarsen doubles the step, merging the counts of each pair of steps.
func (b *beatSteps) coarsen() {
	b.step *= 2
	merged := make(map[int64]int64, len(b.counts)/2+1)
	for k, n := range b.counts {
		merged[k-((k%b.step)+b.step)%b.step] += n
	}
	b.counts = merged
}

// rangeOf is the oldest and newest steps counted.
func (b *beatSteps) rangeOf() BeatRange {
	r := BeatRange{Known: !b.unknown, Step: BeatStep}
	if b.step != 0 {
		r.Step = time.Duration(b.step) * time.Second
	}
	if b.unknown || len(b.counts) == 0 {
		return r
	}
	first := true
	var lo, hi int64
	for k := range b.counts {
		if first || k < lo {
			lo = k
		}
		if first || k > hi {
			hi = k
		}
		first = false
	}
	r.Oldest, r.Newest = time.Unix(lo, 0).UTC(), time.Unix(hi, 0).UTC()
	return r
}
