package auth_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

var allBuckets = []string{fleet.BucketDevices, fleet.BucketDesired, fleet.BucketState, fleet.BucketHeartbeats}

// streams is every fleet stream's message count and last sequence, read as the operator: any write,
// purge or delete changes it (or makes a stream unreadable).
func streams(t *testing.T, o *client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	for _, b := range allBuckets {
		s, err := o.js.Stream(ctx, "KV_"+b)
		if err != nil {
			t.Fatalf("stream of %s: %v", b, err)
		}
		out[b] = fmt.Sprintf("%d messages, last sequence %d", s.CachedInfo().State.Msgs, s.CachedInfo().State.LastSeq)
	}
	return out
}

// aimFleet is two real agents on their own device credentials (dev-a, dev-b), each running one
// deployment, against the configuration fleet-auth init writes; the heartbeat TTL is an hour so that no
// write happens while a test compares the streams.
type aimFleet struct {
	a       *fleettest.Authorized
	op      *client
	agents  map[string]*agent.Agent
	runtime map[string]*fleettest.FakeRuntime
}

func startAimFleet(t *testing.T) *aimFleet {
	t.Helper()
	a := fleettest.StartAuthorized(t, nil)
	ctx := t.Context()
	o := connect(t, a, a.OperatorCreds)
	st, err := store.Open(ctx, o.js, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	o.st = st
	f := &aimFleet{a: a, op: o, agents: map[string]*agent.Agent{}, runtime: map[string]*fleettest.FakeRuntime{}}
	for _, id := range []string{"dev-a", "dev-b"} {
		if _, err := st.Publish(ctx, id, dep, desired(1)); err != nil {
			t.Fatal(err)
		}
		d := connect(t, a, issue(t, a, auth.RoleDevice, id)).bind(t)
		rt := &fleettest.FakeRuntime{}
		rt.AppendLog(dep, "hello from "+id)
		ag := &agent.Agent{Device: fleet.DeviceInfo{ID: id}, Store: d.st, Runtime: rt, Log: logr.Discard(), RetryAfter: 100 * time.Millisecond}
		actx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = ag.Run(actx) }()
		t.Cleanup(func() { stop(); <-done })
		f.agents[id], f.runtime[id] = ag, rt
		eventually(t, id+" runs generation 1", func(ctx context.Context) error {
			s, err := st.StateOf(ctx, dep, id)
			if err == nil && (s == nil || s.Phase != fleet.PhaseRunning) {
				err = fmt.Errorf("state %+v", s)
			}
			return err
		})
		eventually(t, id+" beats", func(ctx context.Context) error { _, err := st.Heartbeats.Get(ctx, id); return err })
	}
	return f
}

// hostileReplies are reply subjects a viewer must not be able to make dev-a publish to.
func hostileReplies() []string {
	var out []string
	for _, b := range allBuckets {
		out = append(out, "$JS.API.STREAM.DELETE.KV_"+b, "$JS.API.STREAM.PURGE.KV_"+b)
	}
	return append(out,
		"$KV."+fleet.BucketState+"."+fleet.StateKey(dep, "dev-b"),
		"$KV."+fleet.BucketDevices+"."+fleet.DeviceKey("dev-b"),
		"$KV."+fleet.BucketHeartbeats+"."+fleet.DeviceKey("dev-b"),
		// Reply subjects and inboxes of other requesters, well-formed for dev-a.
		fleet.ReplySubject(auth.Requester(auth.RoleViewer, "bob"), "dev-a", "n1"),
		fleet.ReplySubject(auth.Requester(auth.RoleOperator, auth.OperatorUser), "dev-a", "n1"),
		fleet.ReplySubject(auth.Requester(auth.RoleViewer, "operator"), "dev-a", "n1"),
		auth.InboxPrefix(auth.RoleViewer, "bob")+".n1",
		auth.InboxPrefix(auth.RoleOperator, auth.OperatorUser)+".n1",
		auth.InboxPrefix(auth.RoleDevice, "dev-b")+".n1",
		// The viewer's own prefix, naming another device, or no nonce.
		fleet.ReplySubject(auth.Requester(auth.RoleViewer, "alice"), "dev-b", "n1"),
		fleet.ReplyPrefix(auth.Requester(auth.RoleViewer, "alice"))+".dev-a",
		fleet.ReplyPrefix(auth.Requester(auth.RoleViewer, "alice"))+".dev-a.n1.more",
	)
}

// TestRequestsCannotAimADevice: with a viewer's credentials, log and events requests to a real agent
// whose reply subject is a JetStream API subject (deleting or purging any fleet stream), another
// device's key, or another requester's reply subject or inbox are not answered: the agent refuses and
// counts each, no fleet stream changes, and no other requester receives anything. The positive control:
// the same requests with the viewer's own reply subject are answered.
func TestRequestsCannotAimADevice(t *testing.T) {
	f := startAimFleet(t)
	v := connect(t, f.a, issue(t, f.a, auth.RoleViewer, "alice"))
	alice := auth.Requester(auth.RoleViewer, "alice")
	// Spies: what bob, the operator and a viewer named "operator" would receive on their reply subjects
	// and inboxes.
	var spies []*nats.Subscription
	for who, subjects := range map[auth.Role][]string{
		auth.RoleViewer:   {fleet.ReplyPrefix(auth.Requester(auth.RoleViewer, "bob")) + ".>", auth.InboxPrefix(auth.RoleViewer, "bob") + ".n1"},
		auth.RoleOperator: {fleet.ReplyPrefix(auth.Requester(auth.RoleOperator, auth.OperatorUser)) + ".>", auth.InboxPrefix(auth.RoleOperator, auth.OperatorUser) + ".n1"},
	} {
		creds := f.a.OperatorCreds
		if who == auth.RoleViewer {
			creds = issue(t, f.a, auth.RoleViewer, "bob")
		}
		c := connect(t, f.a, creds)
		for _, s := range subjects {
			sub, err := c.nc.SubscribeSync(s)
			if err != nil {
				t.Fatal(err)
			}
			spies = append(spies, sub)
		}
		if err := c.nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	vo := connect(t, f.a, issue(t, f.a, auth.RoleViewer, "operator"))
	voSpy, err := vo.nc.SubscribeSync(fleet.ReplyPrefix(auth.Requester(auth.RoleViewer, "operator")) + ".>")
	if err != nil {
		t.Fatal(err)
	}
	spies = append(spies, voSpy)
	if err := vo.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	before := streams(t, f.op)
	logReq := fmt.Appendf(nil, `{"namespace":%q,"name":%q}`, dep.Namespace, dep.Name)
	hostile := hostileReplies()
	for _, reply := range hostile {
		for _, subj := range []string{fleet.LogsSubject("dev-a", alice), fleet.EventsSubject("dev-a", alice)} {
			if err := v.nc.PublishRequest(subj, reply, logReq); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := v.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	want := uint64(2 * len(hostile))
	for deadline := time.Now().Add(10 * time.Second); f.agents["dev-a"].RefusedRequests() < want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	// The positive control, after the hostile requests (the agent handles a connection's messages in
	// order): the viewer's own reply subject is answered, with the logs and the events.
	allowed(t, "the viewer reads dev-a's logs on its own reply subject", func(ctx context.Context) error {
		var lines []string
		err := agent.RequestLogs(ctx, v.nc, alice, "dev-a", dep, 0, func(l string) { lines = append(lines, l) })
		if err == nil && fmt.Sprint(lines) != "[hello from dev-a]" {
			err = fmt.Errorf("lines %q", lines)
		}
		return err
	})
	allowed(t, "the viewer reads dev-a's events on its own reply subject", func(ctx context.Context) error {
		r, err := agent.RequestEvents(ctx, v.nc, alice, "dev-a", dep)
		if err == nil && len(r.Events) == 0 {
			err = fmt.Errorf("no events")
		}
		return err
	})
	if got := f.agents["dev-a"].RefusedRequests(); got != want {
		t.Errorf("dev-a refused %d requests, want %d (the control must not be refused)", got, want)
	}
	for _, s := range spies {
		if m, err := s.NextMsg(200 * time.Millisecond); err == nil {
			t.Errorf("%s received %q on %s", s.Subject, m.Data, m.Subject)
		}
	}
	if after := streams(t, f.op); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the fleet's streams changed:\nbefore %v\nafter  %v", before, after)
	}
	if len(v.errs) > 0 {
		t.Errorf("the viewer's requests to its own role's subjects were refused: %v", <-v.errs)
	}
}

// TestDevicesPublishOnlyTheirOwnAnswers is the server's half, without the agent's check: a device's
// connection that answers whatever it is asked (a compromised or naive agent) cannot publish to a reply
// subject a viewer chose: a JetStream API subject (the stream survives), another device's key or another
// requester's reply subject. The same answer to the requester's own reply subject arrives. The viewer
// cannot name another requester in its request, nor subscribe to another requester's answers.
func TestDevicesPublishOnlyTheirOwnAnswers(t *testing.T) {
	f := startAimFleet(t)
	alice := auth.Requester(auth.RoleViewer, "alice")
	v := connect(t, f.a, issue(t, f.a, auth.RoleViewer, "alice"))
	naive := connect(t, f.a, issue(t, f.a, auth.RoleDevice, "dev-c"))
	sub, err := naive.nc.Subscribe(fleet.LogsServeSubject("dev-c"), func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := naive.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	before := streams(t, f.op)
	for _, reply := range []string{
		"$JS.API.STREAM.DELETE.KV_" + fleet.BucketDesired,
		"$JS.API.STREAM.PURGE.KV_" + fleet.BucketState,
		"$KV." + fleet.BucketState + "." + fleet.StateKey(dep, "dev-b"),
		fleet.ReplySubject(alice, "dev-b", "n1"),
		auth.InboxPrefix(auth.RoleViewer, "alice") + ".n1",
	} {
		naive.refused(t, "dev-c answers to "+reply, func(ctx context.Context) error {
			if err := v.nc.PublishRequest(fleet.LogsSubject("dev-c", alice), reply, []byte(`{}`)); err != nil {
				return err
			}
			<-ctx.Done() // a refused publish is only reported asynchronously
			return ctx.Err()
		})
	}
	naive.refused(t, "dev-c publishes to the JetStream API", func(ctx context.Context) error {
		if err := naive.nc.Publish("$JS.API.STREAM.DELETE.KV_"+fleet.BucketState, nil); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	})
	naive.refused(t, "dev-c publishes to dev-b's reply subject", func(ctx context.Context) error {
		if err := naive.nc.Publish(fleet.ReplySubject(alice, "dev-b", "n1"), nil); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if after := streams(t, f.op); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the fleet's streams changed:\nbefore %v\nafter  %v", before, after)
	}
	allowed(t, "control: dev-c's answer to alice's own reply subject arrives", func(ctx context.Context) error {
		own, err := v.nc.SubscribeSync(fleet.ReplySubject(alice, "dev-c", "n2"))
		if err != nil {
			return err
		}
		defer func() { _ = own.Unsubscribe() }()
		if err := v.nc.PublishRequest(fleet.LogsSubject("dev-c", alice), own.Subject, []byte(`{}`)); err != nil {
			return err
		}
		_, err = own.NextMsgWithContext(ctx)
		return err
	})

	for _, other := range []fleet.Requester{auth.Requester(auth.RoleViewer, "bob"), auth.Requester(auth.RoleOperator, auth.OperatorUser), {Role: "viewer.alice", Name: "x"}} {
		for _, subj := range []string{fleet.LogsSubject("dev-a", other), fleet.EventsSubject("dev-a", other)} {
			v.refused(t, "alice sends "+subj, func(ctx context.Context) error {
				if err := v.nc.PublishRequest(subj, fleet.ReplySubject(alice, "dev-a", "n3"), []byte(`{}`)); err != nil {
					return err
				}
				<-ctx.Done()
				return ctx.Err()
			})
		}
	}
	for _, subj := range []string{
		fleet.ReplyPrefix(auth.Requester(auth.RoleViewer, "bob")) + ".>",
		fleet.ReplyPrefix(auth.Requester(auth.RoleOperator, auth.OperatorUser)) + ".>",
		fleet.ReplySubject(auth.Requester(auth.RoleOperator, auth.OperatorUser), "dev-a", "n1"),
		strings.TrimSuffix(fleet.ReplyPrefix(alice), ".alice") + ".*.>",
	} {
		v.refused(t, "alice subscribes to "+subj, v.receive(subj))
	}
}
