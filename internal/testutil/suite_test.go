package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTimings(t *testing.T) {
	var out bytes.Buffer
	tm := Timings{Suite: "e2e", Out: &out}
	tm.Record("first", 1500*time.Millisecond, "a note")
	tm.Record("second", 2*time.Second, "")
	tm.Print()
	got := out.String()
	for _, want := range []string{"e2e phase: first", "1.5s a note\n", "e2e phase: second", "\ne2e timings:\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	summary := got[strings.Index(got, "timings:"):]
	if strings.Index(summary, "first") > strings.Index(summary, "second") || !strings.Contains(summary, "2.0s") {
		t.Errorf("the summary does not list the phases in order:\n%s", summary)
	}
}

func TestKeepLogsOfFailure(t *testing.T) {
	for _, succeeded := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "logs")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		KeepLogsOfFailure(&out, "olm", dir, succeeded)
		_, err := os.Stat(dir)
		if kept := err == nil; kept == succeeded {
			t.Errorf("succeeded %v: the logs kept = %v", succeeded, kept)
		}
		if said := strings.Contains(out.String(), "olm: the suite failed; the logs of every process are kept in "+dir); said == succeeded {
			t.Errorf("succeeded %v: %q", succeeded, out.String())
		}
	}
	var out bytes.Buffer
	KeepLogsOfFailure(&out, "olm", "", false)
	if out.Len() != 0 {
		t.Errorf("without a log directory: %q", out.String())
	}
}
