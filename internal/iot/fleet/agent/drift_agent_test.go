package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// driftRuntime is fleettest's fake runtime with containers that can be stopped or removed behind the
// agent's back: it observes them, and can hold a repair (Apply) until the test lets it go.
type driftRuntime struct {
	*fleettest.FakeRuntime
	mu sync.Mutex
	// down is what a deployment's container looks like while it does not run.
	down map[fleet.DeploymentKey]agent.ContainerStatus
	// crashing keeps a container down through repairs.
	crashing bool
	// hold, when set, makes Apply signal applying and wait for release.
	hold      bool
	applying  chan struct{}
	release   chan struct{}
	changedFn func()
}

func newDriftRuntime() *driftRuntime {
	return &driftRuntime{FakeRuntime: &fleettest.FakeRuntime{}, down: map[fleet.DeploymentKey]agent.ContainerStatus{},
		applying: make(chan struct{}, 8), release: make(chan struct{})}
}

func (r *driftRuntime) Apply(ctx context.Context, d fleet.DeploymentKey, score iotv1.Score) error {
	r.mu.Lock()
	hold := r.hold
	r.mu.Unlock()
	if hold {
		r.applying <- struct{}{}
		select {
		case <-r.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	if !r.crashing {
		delete(r.down, d)
	}
	r.mu.Unlock()
	return r.FakeRuntime.Apply(ctx, d, score)
}

func (r *driftRuntime) Observe(_ context.Context, d fleet.DeploymentKey, _ iotv1.Score) ([]agent.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, isDown := r.down[d]
	if _, running := r.Running(d); !running {
		c, isDown = agent.ContainerStatus{Container: "app"}, true
	}
	if !isDown {
		c = agent.ContainerStatus{Container: "app", Present: true, Current: true, Running: true}
	}
	return []agent.ContainerStatus{c}, nil
}

// takeDown stops (or removes) d's container behind the agent's back.
func (r *driftRuntime) takeDown(d fleet.DeploymentKey, removed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := agent.ContainerStatus{Container: "app", Present: true, Current: true, ExitCode: 137}
	if removed {
		c = agent.ContainerStatus{Container: "app"}
	}
	r.down[d] = c
}

func (r *driftRuntime) set(hold, crashing bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold, r.crashing = hold, crashing
}

// eventRuntime is a driftRuntime that streams changes, as podman events does.
type eventRuntime struct{ *driftRuntime }

func (r eventRuntime) Watch(ctx context.Context, changed func()) error {
	r.mu.Lock()
	r.changedFn = changed
	r.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (r eventRuntime) changed() bool {
	r.mu.Lock()
	fn := r.changedFn
	r.mu.Unlock()
	if fn != nil {
		fn()
	}
	return fn != nil
}

// stateWatch folds the state bucket into fleet.Counters as the operator does, and hands each record of
// one key to the test.
type stateWatch struct {
	counters fleet.Counters
	records  chan *fleet.State
}

func watchState(ctx context.Context, t *testing.T, f fleettest.Connected, key string) *stateWatch {
	t.Helper()
	w, err := f.Store.State.WatchAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sw := &stateWatch{records: make(chan *fleet.State, 64)}
	sw.counters.Reset()
	done := make(chan struct{})
	t.Cleanup(func() { _ = w.Stop(); <-done })
	go func() {
		defer close(done)
		for e := range w.Updates() {
			if e == nil {
				sw.counters.Synced()
				continue
			}
			if err := sw.counters.Observe(fleet.Change{Revision: e.Revision(), Key: e.Key(), Value: e.Value(),
				Deleted: e.Operation() != jetstream.KeyValuePut}); err != nil {
				t.Errorf("counters: %v", err)
			}
			if e.Key() == key && e.Operation() == jetstream.KeyValuePut {
				if s, err := fleet.DecodeState(e.Value()); err == nil {
					sw.records <- s
				}
			}
		}
	}()
	return sw
}

// next waits for the key's next record that satisfies ok, failing the test after 20 seconds.
func (sw *stateWatch) next(t *testing.T, what string, ok func(*fleet.State) bool) *fleet.State {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case s := <-sw.records:
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("no state record %s", what)
		}
	}
}

func phase(p fleet.Phase) func(*fleet.State) bool {
	return func(s *fleet.State) bool { return s.Phase == p }
}

func (sw *stateWatch) counts(d fleet.DeploymentKey, gen int64) fleet.PhaseCounts {
	return sw.counters.Snapshot(d).ByGeneration[gen]
}

type driftFixture struct {
	f   fleettest.Connected
	ctx context.Context
	a   *agent.Agent
	sw  *stateWatch
	d   fleet.DeploymentKey
}

// startDrift runs an agent with rt against a real NATS server, gives it deployment shop/web and waits
// for it to run.
func startDrift(t *testing.T, rt agent.Runtime, every time.Duration) driftFixture {
	f := fleettest.StartConnected(t)
	ctx, cancel := context.WithCancel(f.Ctx)
	d := fleet.DeploymentKey{Namespace: "shop", Name: "web"}
	sw := watchState(ctx, t, f, fleet.StateKey(d, "pi"))
	a := &agent.Agent{Device: fleet.DeviceInfo{ID: "pi"}, Store: f.Store, Runtime: rt, Log: logr.Discard(),
		RetryAfter: 50 * time.Millisecond, ReconcileInterval: every}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	sc := iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{Name: "app", Image: "img:1"}}}}
	if _, err := f.Store.Publish(ctx, "pi", d, fleet.Desired{Generation: 1, Score: sc}); err != nil {
		t.Fatal(err)
	}
	sw.next(t, "Running", phase(fleet.PhaseRunning))
	return driftFixture{f: f, ctx: ctx, a: a, sw: sw, d: d}
}

// repairHeld checks, while the runtime holds the repair, that the device is reported Pending with the
// reason and that the counters (folded from the state bucket as the operator folds them) count it
// Pending and not Running; then lets the repair go and waits for Running.
func (x driftFixture) repairHeld(t *testing.T, rt *driftRuntime, reason string) {
	t.Helper()
	s := x.sw.next(t, "Pending", phase(fleet.PhasePending))
	if !strings.Contains(s.Message, reason) || s.PrevPhase != fleet.PhaseRunning {
		t.Errorf("the drift record: %+v, want Pending after Running with %s", s, reason)
	}
	select {
	case <-rt.applying:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent never repaired")
	}
	// The Pending record was folded before the repair began (it was written first); wait for the
	// fold to reach it, without a timed assert.
	for deadline := time.Now().Add(20 * time.Second); x.sw.counts(x.d, 1).Pending != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("the counters never counted the drift: %+v", x.sw.counts(x.d, 1))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c := x.sw.counts(x.d, 1); c.Running != 0 || c.Pending != 1 {
		t.Errorf("while the container is down, the counters say %+v", c)
	}
	if cur, err := x.f.Store.StateOf(x.ctx, x.d, "pi"); err != nil || cur.Phase != fleet.PhasePending {
		t.Errorf("while the container is down, the record says %+v (%v)", cur, err)
	}
	rt.set(false, false)
	rt.release <- struct{}{}
	x.sw.next(t, "Running after the repair", phase(fleet.PhaseRunning))
}

// TestDriftRepairedOnTheTick: with no event stream, the tick alone finds a removed container and a
// stopped one, reports them Pending (never Running) until it repaired them, then Running.
func TestDriftRepairedOnTheTick(t *testing.T) {
	rt := newDriftRuntime()
	x := startDrift(t, rt, 20*time.Millisecond)
	for _, removed := range []bool{true, false} {
		rt.set(true, false)
		rt.takeDown(x.d, removed)
		reason := agent.ReasonContainerExited
		if removed {
			reason = agent.ReasonContainerMissing
		}
		x.repairHeld(t, rt, reason)
	}
	if c := x.sw.counts(x.d, 1); c.Running != 1 || c.Pending != 0 {
		t.Errorf("after the repairs: %+v", c)
	}
}

// TestDriftRepairedOnARuntimeEvent: with a tick of an hour, a change the runtime streams (podman
// events) is what makes the agent look.
func TestDriftRepairedOnARuntimeEvent(t *testing.T) {
	rt := eventRuntime{newDriftRuntime()}
	x := startDrift(t, rt, time.Hour)
	rt.set(true, false)
	rt.takeDown(x.d, true)
	for deadline := time.Now().Add(20 * time.Second); !rt.changed(); {
		if time.Now().After(deadline) {
			t.Fatal("the agent never watched the runtime's events")
		}
		time.Sleep(5 * time.Millisecond)
	}
	x.repairHeld(t, rt.driftRuntime, agent.ReasonContainerMissing)
}

// TestCrashLoopIsReportedFailed: a container that keeps exiting whatever the agent does is reported
// Failed with the reason, and Running again once it stays up; the events say so over NATS.
func TestCrashLoopIsReportedFailed(t *testing.T) {
	rt := newDriftRuntime()
	x := startDrift(t, rt, 20*time.Millisecond)
	rt.set(false, true)
	rt.takeDown(x.d, false)
	s := x.sw.next(t, "Failed", phase(fleet.PhaseFailed))
	if !strings.HasPrefix(s.Message, agent.ReasonCrashLoop+":") {
		t.Errorf("the crash loop's record says %q", s.Message)
	}
	if c := x.sw.counts(x.d, 1); c.Running != 0 {
		t.Errorf("a crash-looping device counted running: %+v", c)
	}
	rt.set(false, false)
	rt.mu.Lock()
	delete(rt.down, x.d)
	rt.mu.Unlock()
	x.sw.next(t, "Running once it stays up", phase(fleet.PhaseRunning))

	r, err := agent.RequestEvents(x.ctx, x.f.Conn, tester, "pi", x.d)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range r.Events {
		reasons = append(reasons, e.Reason)
		if e.Namespace != "shop" || e.Name != "web" {
			t.Errorf("an event of another deployment: %+v", e)
		}
	}
	for _, want := range []string{agent.ReasonApplied, agent.ReasonContainerExited, agent.ReasonCrashLoop, agent.ReasonRepaired} {
		if !slices.Contains(reasons, want) {
			t.Errorf("events %v lack %s", reasons, want)
		}
	}
	if i := slices.Index(reasons, agent.ReasonCrashLoop); i >= 0 && r.Events[i].Severity != agent.SeverityError {
		t.Errorf("the crash loop's severity is %s", r.Events[i].Severity)
	}
	if r.Device != "pi" || r.AgentVersion != agent.Version || r.LastHeartbeatAt == nil || r.LastHeartbeatAt.IsZero() {
		t.Errorf("the agent's information: %+v", r)
	}
	// A request the contract does not allow is answered with an error, not with everything.
	if _, err := agent.RequestEvents(x.ctx, x.f.Conn, tester, "pi", fleet.DeploymentKey{Namespace: "shop"}); err == nil {
		t.Error("a request naming only a namespace was answered")
	}
}

// TestRequestEventsBoundsWhatADeviceSends: whatever a device replies, the client keeps at most
// EventRingSize events with bounded text, and refuses a reply naming another device; an ordinary reply
// (the positive control) comes through unchanged.
func TestRequestEventsBoundsWhatADeviceSends(t *testing.T) {
	f := fleettest.StartConnected(t)
	huge := strings.Repeat("m", 100_000)
	reply := func(r agent.EventsReply) {
		t.Helper()
		sub, err := f.Conn.Subscribe(fleet.EventsServeSubject("evil"), func(m *nats.Msg) {
			data, _ := json.Marshal(r)
			_ = m.Respond(data)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	evil := agent.EventsReply{Device: "evil", AgentVersion: strings.Repeat("v", 1000)}
	for range 300 { // under NATS' 1 MB payload
		evil.Events = append(evil.Events, agent.Event{Severity: "fatal!", Reason: huge[:1000], Message: huge[:1500]})
	}
	reply(evil)
	r, err := agent.RequestEvents(f.Ctx, f.Conn, tester, "evil", fleet.DeploymentKey{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Events) != agent.EventRingSize || len(r.AgentVersion) > 64 {
		t.Errorf("%d events kept, agent version %d bytes", len(r.Events), len(r.AgentVersion))
	}
	for _, e := range r.Events {
		if len(e.Reason) > 64 || len(e.Message) > 1024 || e.Severity != agent.SeverityWarning {
			t.Fatalf("an event kept unbounded: reason %d, message %d bytes, severity %q", len(e.Reason), len(e.Message), e.Severity)
		}
	}

	good := agent.EventsReply{Device: "good", AgentVersion: "0.1.0", Events: []agent.Event{
		{Severity: agent.SeverityInfo, Reason: agent.ReasonApplied, Message: "generation 1 runs", Namespace: "shop", Name: "web", Count: 1}}}
	sub, err := f.Conn.Subscribe(fleet.EventsServeSubject("good"), func(m *nats.Msg) {
		data, _ := json.Marshal(good)
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	r, err = agent.RequestEvents(f.Ctx, f.Conn, tester, "good", fleet.DeploymentKey{})
	if err != nil || len(r.Events) != 1 || r.Events[0] != good.Events[0] {
		t.Errorf("an ordinary reply: %+v, %v", r, err)
	}
	// A device answering for another.
	sub2, err := f.Conn.Subscribe(fleet.EventsServeSubject("liar"), func(m *nats.Msg) {
		data, _ := json.Marshal(good)
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub2.Unsubscribe() }()
	if _, err := agent.RequestEvents(f.Ctx, f.Conn, tester, "liar", fleet.DeploymentKey{}); err == nil {
		t.Error("a reply naming another device was accepted")
	}
	// No device: the request fails rather than hanging.
	ctx, cancel := context.WithTimeout(f.Ctx, 2*time.Second)
	defer cancel()
	if _, err := agent.RequestEvents(ctx, f.Conn, tester, "nobody", fleet.DeploymentKey{}); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("no device: %v", err)
	}
}
