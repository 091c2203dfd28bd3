package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFleetTinyRun runs the fleet workload at a tiny N: it proves the run works end to end (NATS, the
// simulator, the operator binary on a control plane, the status watch, pprof, the naive recount, the
// report), not how fast anything is; `make bench` measures.
func TestFleetTinyRun(t *testing.T) {
	c := tinyRunConfig(t, "starts a control plane, a NATS server and the operator")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := runFleet(ctx, c, fleetOptions{Sizes: []int{3}, Servers: []int{1, 3}, Batch: 2, Connections: 2, Workers: 3, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatalf("fleet: %v (logs in %s)", err, c.LogDir)
	}
	if len(res.Points) != 2 || res.Points[0].Servers != 1 || res.Points[1].Servers != 3 {
		t.Fatalf("%d points, want 2: one server, then the three-server cluster", len(res.Points))
	}
	for _, p := range res.Points {
		checkTinyFleetPoint(t, p)
	}
	var b strings.Builder
	renderFleet(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }, res)
	for _, want := range []string{"### IoT fleet (`-workloads=fleet`)", "| 3 | 1 server |", "| 3 | 3-server cluster, R3 |", "naive recount"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// checkTinyFleetPoint checks that every figure of a tiny run was measured.
func checkTinyFleetPoint(t *testing.T, p fleetPoint) {
	t.Helper()
	if p.Converge <= 0 || p.FailReflected <= 0 || p.RecoverReflect <= 0 {
		t.Errorf("times not measured: converge %s, batch reflected %s and %s", p.Converge, p.FailReflected, p.RecoverReflect)
	}
	// Each device goes Pending, then Running: two transitions, each at least a publish and a delivery.
	if p.Transitions != 6 || p.MsgsIn < 6 || p.MsgsOut < 6 {
		t.Errorf("transitions %d (want 6), messages in %v, out %v", p.Transitions, p.MsgsIn, p.MsgsOut)
	}
	if p.Mem.HeapAlloc <= 0 || p.Mem.RSS < p.Mem.HeapInuse {
		t.Errorf("memory: %+v", p.Mem)
	}
	if p.NaiveTick <= 0 || p.NaiveMsgs < 6 {
		t.Errorf("naive recount: %s, %v messages", p.NaiveTick, p.NaiveMsgs)
	}
	if p.StatusWrites < 3 {
		t.Errorf("%d status updates seen, want at least converged, failed and recovered", p.StatusWrites)
	}
}

func TestTakeFleet(t *testing.T) {
	tests := []struct {
		in, rest string
		fleet    bool
	}{
		{"", "all", true},
		{"all", "all", true},
		{"fleet", "", true},
		{"irc,fleet", "irc", true},
		{"irc", "irc", false},
	}
	for _, tt := range tests {
		rest, fleet := takeFleet(tt.in)
		if rest != tt.rest || fleet != tt.fleet {
			t.Errorf("takeFleet(%q) = %q, %v; want %q, %v", tt.in, rest, fleet, tt.rest, tt.fleet)
		}
	}
}
