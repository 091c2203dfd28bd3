package auth_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// TestAgentWithDeviceCredentials runs the real agent (with the fake runtime) on a device's own
// credentials, and the operator's side of the store on the operator's, against the shipped
// configuration: the device registers, beats, receives its desired state, reports Running for each
// generation, answers a viewer's log and event requests, and removes what is withdrawn, and neither
// side meets a single permissions violation nor logs an error on the way. So the templates allow
// everything the agent and the operator's store do, not only forbid what they must not.
func TestAgentWithDeviceCredentials(t *testing.T) {
	a := fleettest.StartAuthorized(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	o := connect(t, a, a.OperatorCreds)
	op, err := store.Open(ctx, o.js, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := connect(t, a, issue(t, a, auth.RoleDevice, "pi-1")).bind(t)
	var (
		mu     sync.Mutex
		logged []string
	)
	log := funcr.New(func(prefix, args string) {
		if strings.Contains(args, `"error"`) || strings.Contains(args, "error=") {
			mu.Lock()
			logged = append(logged, args)
			mu.Unlock()
		}
	}, funcr.Options{})
	rt := &fleettest.FakeRuntime{}
	ag := &agent.Agent{Device: fleet.DeviceInfo{ID: "pi-1", Labels: map[string]string{"site": "lyon"}}, Store: d.st,
		Runtime: rt, Log: log, RetryAfter: 100 * time.Millisecond}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ag.Run(actx) }()

	eventually(t, "pi-1 registers", func(ctx context.Context) error {
		found := false
		err := op.EachDevice(ctx, func(info *fleet.DeviceInfo) { found = found || info.ID == "pi-1" && info.Labels["site"] == "lyon" })
		if err == nil && !found {
			err = fmt.Errorf("not registered")
		}
		return err
	})
	eventually(t, "pi-1 beats", func(ctx context.Context) error {
		_, err := op.Heartbeats.Get(ctx, fleet.DeviceKey("pi-1"))
		return err
	})
	for gen := int64(1); gen <= 2; gen++ {
		want := desired(gen)
		want.Score.PodmanV0.Services[0].Image = fmt.Sprintf("registry.example/app:%d", gen)
		if _, err := op.Publish(ctx, "pi-1", dep, want); err != nil {
			t.Fatal(err)
		}
		eventually(t, fmt.Sprintf("pi-1 reports Running for generation %d", gen), func(ctx context.Context) error {
			s, err := op.StateOf(ctx, dep, "pi-1")
			if err == nil && (s == nil || s.Phase != fleet.PhaseRunning || s.Generation != gen) {
				err = fmt.Errorf("state %+v", s)
			}
			return err
		})
		if score, ok := rt.Running(dep); !ok || score.PodmanV0.Services[0].Image != want.Score.PodmanV0.Services[0].Image {
			t.Errorf("generation %d: the runtime runs %+v", gen, score.PodmanV0)
		}
	}

	rt.AppendLog(dep, "one", "two")
	v := connect(t, a, issue(t, a, auth.RoleViewer, "alice"))
	allowed(t, "a viewer reads pi-1's logs", func(ctx context.Context) error {
		var lines []string
		err := agent.RequestLogs(ctx, v.nc, auth.Requester(auth.RoleViewer, "alice"), "pi-1", dep, 0, func(l string) { lines = append(lines, l) })
		if err == nil && fmt.Sprint(lines) != "[one two]" {
			err = fmt.Errorf("lines %q", lines)
		}
		return err
	})
	allowed(t, "a viewer reads pi-1's events", func(ctx context.Context) error {
		r, err := agent.RequestEvents(ctx, v.nc, auth.Requester(auth.RoleViewer, "alice"), "pi-1", dep)
		if err == nil && (len(r.Events) == 0 || r.LastHeartbeatAt == nil) {
			err = fmt.Errorf("reply %+v", r)
		}
		return err
	})

	if err := op.Withdraw(ctx, "pi-1", dep); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pi-1 removes the withdrawn deployment", func(context.Context) error {
		if _, ok := rt.Running(dep); ok {
			return fmt.Errorf("still running")
		}
		return nil
	})

	stop()
	if err := <-done; err != nil {
		t.Errorf("the agent: %v", err)
	}
	for who, c := range map[string]*client{"the device": d, "the operator": o, "the viewer": v} {
		for len(c.errs) > 0 {
			t.Errorf("%s's connection: %v", who, <-c.errs)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		t.Errorf("the agent logged %s", l)
	}
}
