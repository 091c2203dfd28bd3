package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

func TestRecountCause(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: revision 7 after 5", fleet.ErrGap), CauseGap},
		{&fleet.KeyError{Err: fmt.Errorf("%w: x", fleet.ErrImpossible)}, CauseImpossible},
		{fmt.Errorf("%w: x", fleet.ErrUnknownRemoval), CauseImpossible},
		{&fleet.Rejection{Recount: fmt.Errorf("%w: x", fleet.ErrUnknownRemoval)}, CauseImpossible},
		{errReconnected, CauseReconnect},
		{errSelector, CauseSelector},
		{errors.New("state watch closed"), CauseReconnect},
	}
	for _, tt := range tests {
		if got := recountCause(tt.err); got != tt.want {
			t.Errorf("recountCause(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

// TestRecountBackoff: recounts the fleet's records cause wait 0, then 1 s doubling to 1 min while they
// keep coming; a pass in step for a minute starts over at 0; selector recounts never wait nor count.
func TestRecountBackoff(t *testing.T) {
	var b backoff
	type step struct {
		cause string
		ran   time.Duration
		want  time.Duration
	}
	s := time.Second
	steps := []step{
		{CauseImpossible, 0, 0}, {CauseImpossible, 0, s}, {CauseGap, 0, 2 * s}, {CauseSelector, 0, 0}, {CauseImpossible, 0, 4 * s},
		{CauseImpossible, 0, 8 * s}, {CauseImpossible, 0, 16 * s}, {CauseImpossible, 0, 32 * s}, {CauseImpossible, 0, time.Minute},
		{CauseImpossible, 0, time.Minute}, {CauseReconnect, 0, s},
		{CauseImpossible, time.Minute, 0}, {CauseImpossible, 0, s}, {CauseReconnect, 2 * s, 0},
	}
	for i, st := range steps {
		if got := b.after(st.cause, st.ran); got != st.want {
			t.Fatalf("step %d (%s after %s): wait %s, want %s", i, st.cause, st.ran, got, st.want)
		}
	}
}

// TestRefoldResetsOncePerPass: the counts are reset before the first pass and as soon as each pass ends
// (not again before the next), and each count reports its cause.
func TestRefoldResetsOncePerPass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var causes []string
	s := &Store{Hooks: Hooks{Recount: func(c string) { causes = append(causes, c) }}}
	ends := []error{fmt.Errorf("%w: x", fleet.ErrImpossible), errSelector, errSelector}
	resets, passes := 0, 0
	err := s.refold(ctx, func() { resets++ }, func() error {
		if resets != passes+1 {
			t.Fatalf("pass %d after %d resets", passes+1, resets)
		}
		passes++
		if passes > len(ends) {
			cancel()
			return ctx.Err()
		}
		return ends[passes-1]
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint([]string{CauseStart, CauseImpossible, CauseSelector, CauseSelector}); fmt.Sprint(causes) != want {
		t.Errorf("causes %v, want %s", causes, want)
	}
}
