package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// TestLogsOverRequestReply: a device keeps its deployment's newest lines (at most DefaultLogLines) and
// streams the newest N of them to whoever asks on its logs subject, over a real NATS server.
// tester is the requester the tests of this package name (their server enforces no permissions).
var tester = fleet.Requester{Role: "user", Name: "test"}

func TestLogsOverRequestReply(t *testing.T) {
	f := fleettest.StartConnected(t)
	ctx, nc, st := f.Ctx, f.Conn, f.Store
	d := fleet.DeploymentKey{Namespace: "t", Name: "web"}
	dev := fleettest.StartDevice(ctx, st, "logger", nil, nil)
	defer dev.Stop()
	for i := range agent.DefaultLogLines + 500 {
		dev.Runtime.AppendLog(d, fmt.Sprintf("line %05d %s", i, "some padding to make the chunks split"))
	}

	read := func(n int) ([]string, error) {
		var got []string
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		err := agent.RequestLogs(rctx, nc, tester, "logger", d, n, func(l string) { got = append(got, l) })
		return got, err
	}
	// The agent subscribes once it runs; ask until it answers.
	var (
		got []string
		err error
	)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if got, err = read(3); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint([]string{
		"line 10497 some padding to make the chunks split",
		"line 10498 some padding to make the chunks split",
		"line 10499 some padding to make the chunks split"}) {
		t.Errorf("3 newest lines = %q", got)
	}
	got, err = read(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != agent.DefaultLogLines || got[0] != "line 00500 some padding to make the chunks split" {
		t.Errorf("all lines: %d, first %q; want %d from line 00500", len(got), got[0], agent.DefaultLogLines)
	}
	if _, err := read(-1); err != nil {
		t.Errorf("a negative count: %v", err)
	}
}
