package testutil

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Timings are the durations of a long suite's phases (the end-to-end and OLM suites): each is printed as
// it ends, and all of them again in a summary at the end of the suite.
type Timings struct {
	// Suite prefixes every line: "e2e", "olm".
	Suite string
	// Out is where the lines go; nil is os.Stdout.
	Out io.Writer

	mu     sync.Mutex
	phases []phaseTiming
}

type phaseTiming struct {
	phase string
	took  time.Duration
	note  string
}

func (t *Timings) out() io.Writer {
	if t.Out == nil {
		return os.Stdout
	}
	return t.Out
}

// Record prints a phase's duration (and a note, which may be empty) and keeps it for Print.
func (t *Timings) Record(phase string, took time.Duration, note string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phases = append(t.phases, phaseTiming{phase: phase, took: took, note: note})
	_, _ = fmt.Fprintf(t.out(), "%s phase: %-58s %7.1fs %s\n", t.Suite, phase, took.Seconds(), note)
}

// Print prints every phase recorded, in the order they ended.
func (t *Timings) Print() {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = fmt.Fprintf(t.out(), "\n%s timings:\n", t.Suite)
	for _, p := range t.phases {
		_, _ = fmt.Fprintf(t.out(), "  %-60s %7.1fs %s\n", p.phase, p.took.Seconds(), p.note)
	}
}

// KeepLogsOfFailure is what a suite does with the directory of its processes' logs once it ends: it
// removes it after a passing run and says where it is after a failed one, so the logs of a failure are
// kept for whoever reads it. An empty dir (the suite made none) does nothing.
func KeepLogsOfFailure(w io.Writer, suite, dir string, succeeded bool) {
	switch {
	case dir == "":
	case succeeded:
		_ = os.RemoveAll(dir)
	default:
		_, _ = fmt.Fprintf(w, "%s: the suite failed; the logs of every process are kept in %s\n", suite, dir)
	}
}
