package fleet

import (
	"testing"
	"time"
)

func TestBeatSteps(t *testing.T) {
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	type op struct {
		remove bool
		at     *time.Time
	}
	add := func(s string) op { return op{at: at(s)} }
	del := func(s string) op { return op{remove: true, at: at(s)} }
	tests := []struct {
		name           string
		ops            []op
		oldest, newest string // RFC 3339; empty: zero
		known          bool
	}{
		{name: "none stale", known: true},
		{name: "rounded down to the minute", ops: []op{add("2026-11-29T07:10:59Z"), add("2026-11-29T07:12:01Z")},
			oldest: "2026-11-29T07:10:00Z", newest: "2026-11-29T07:12:00Z", known: true},
		{name: "the oldest comes back: the next one is the oldest",
			ops:    []op{add("2026-11-29T07:10:59Z"), add("2026-11-29T07:12:01Z"), add("2026-11-29T07:13:00Z"), del("2026-11-29T07:10:59Z")},
			oldest: "2026-11-29T07:12:00Z", newest: "2026-11-29T07:13:00Z", known: true},
		{name: "two in one minute: one coming back keeps the minute",
			ops:    []op{add("2026-11-29T07:10:01Z"), add("2026-11-29T07:10:40Z"), del("2026-11-29T07:10:01Z")},
			oldest: "2026-11-29T07:10:00Z", newest: "2026-11-29T07:10:00Z", known: true},
		{name: "every one back", ops: []op{add("2026-11-29T07:10:01Z"), del("2026-11-29T07:10:30Z")}, known: true},
		{name: "a lapse without its time", ops: []op{add("2026-11-29T07:10:01Z"), {at: nil}}},
		{name: "a return without its time", ops: []op{add("2026-11-29T07:10:01Z"), {remove: true}}},
		{name: "a return naming a minute nobody lapsed in", ops: []op{add("2026-11-29T07:10:01Z"), del("2026-11-29T08:00:00Z")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b beatSteps
			for _, o := range tt.ops {
				if o.remove {
					b.remove(o.at)
				} else {
					b.add(o.at)
				}
			}
			r := b.rangeOf()
			if r.Known != tt.known {
				t.Fatalf("known %v, want %v", r.Known, tt.known)
			}
			if !tt.known {
				return
			}
			for _, c := range []struct {
				got  time.Time
				want string
			}{{r.Oldest, tt.oldest}, {r.Newest, tt.newest}} {
				if c.want == "" && !c.got.IsZero() || c.want != "" && !c.got.Equal(*at(c.want)) {
					t.Errorf("range %v..%v, want %q..%q", r.Oldest, r.Newest, tt.oldest, tt.newest)
				}
			}
			if r.Step != BeatStep {
				t.Errorf("step %v, want %v", r.Step, BeatStep)
			}
		})
	}
}

// TestBeatStepsBounded: devices going silent in more distinct minutes than MaxBeatSteps double the step
// instead of growing the counts; the oldest and newest stay exact at the doubled step, and every device
// coming back empties it.
func TestBeatStepsBounded(t *testing.T) {
	var b beatSteps
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	n := 3*MaxBeatSteps + 7
	for i := range n {
		v := start.Add(time.Duration(i)*time.Minute + 17*time.Second)
		b.add(&v)
		if len(b.counts) > MaxBeatSteps {
			t.Fatalf("after %d devices: %d steps kept, at most %d", i+1, len(b.counts), MaxBeatSteps)
		}
	}
	r := b.rangeOf()
	if r.Step != 4*BeatStep {
		t.Fatalf("step %v, want %v", r.Step, 4*BeatStep)
	}
	last := start.Add(time.Duration(n-1) * time.Minute)
	if !r.Known || !r.Oldest.Equal(start) || !r.Newest.Equal(last.Truncate(r.Step)) {
		t.Fatalf("range %v..%v (known %v), want %v..%v", r.Oldest, r.Newest, r.Known, start, last.Truncate(r.Step))
	}
	for i := range n {
		v := start.Add(time.Duration(i)*time.Minute + 17*time.Second)
		b.remove(&v)
	}
	if r := b.rangeOf(); !r.Known || !r.Oldest.IsZero() || len(b.counts) != 0 {
		t.Fatalf("after every device came back: %+v, %d steps", r, len(b.counts))
	}
}
