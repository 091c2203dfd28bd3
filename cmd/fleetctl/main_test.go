package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// The package's tests run fleetctl's run (what main runs) against one NATS server that enforces the
// fleet's permissions as shipped, with simulated devices (the real agent, its own device credentials,
// a fake runtime) answering; fleetctl connects with a viewer's credentials unless a test says otherwise.
var (
	srv         *fleettest.Authorized
	operator    *store.Store
	operatorJS  jetstream.JetStream
	viewerCreds string
	testCtx     context.Context
)

// runs counts the runs of TestStates.
var runs int

// heartbeatTTL is short so that a stopped device's heartbeat expires within the test.
const heartbeatTTL = 2 * time.Second

func TestMain(m *testing.M) {
	os.Exit(func() int {
		var err error
		if srv, err = fleettest.StartAuthorizedServer(nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer srv.Shutdown()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		testCtx = ctx
		nc, st, err := srv.ConnectOperator(ctx, heartbeatTTL)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer nc.Close()
		operator = st
		if operatorJS, err = jetstream.New(nc); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if viewerCreds, err = srv.Creds(auth.RoleViewer, "alice"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stopKube()
		return m.Run()
	}())
}

// fleetctl runs the command as main does, with the server's URL and the viewer's credentials unless
// args name others.
func fleetctl(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	full := append([]string{}, args...)
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--creds") }) {
		full = append(full, "--creds", viewerCreds)
	}
	full = append(full, "--nats-url", srv.ClientURL())
	code = run(testCtx, full, &out, &errb)
	return out.String(), errb.String(), code
}

// startDevice runs the real agent for a device with its own credentials and a fake runtime.
func startDevice(t *testing.T, id string, labels map[string]string, rt *fleettest.FakeRuntime) *fleettest.Device {
	t.Helper()
	nc, st, err := srv.ConnectDevice(testCtx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	d := fleettest.StartDevice(testCtx, st, id, labels, rt)
	t.Cleanup(d.Stop)
	return d
}

// eventually polls cond until it holds, for at most 20 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		select {
		case <-testCtx.Done():
			t.Fatal(testCtx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func score(image string) iotv1.Score {
	return iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{Name: "app", Image: image}}}}
}

// TestLogs fetches a deployment's newest lines from a simulated device, as text and as JSON, and says
// clearly when the device is not connected, does not answer in time, or the credentials may not ask.
func TestLogs(t *testing.T) {
	d := fleet.DeploymentKey{Namespace: "logs", Name: "web"}
	dev := startDevice(t, "cam-1", nil, nil)
	for i := range 20 {
		dev.Runtime.AppendLog(d, fmt.Sprintf("line %02d", i))
	}
	args := []string{"logs", "--device", "cam-1", "--namespace", "logs", "--name", "web", "--lines", "3"}
	var out, stderr string
	code := -1
	// The agent subscribes to its logs subject once it runs: ask until it answers.
	eventually(t, "cam-1 answers", func() bool { out, stderr, code = fleetctl(args...); return code == 0 })
	if out != "line 17\nline 18\nline 19\n" {
		t.Errorf("logs = %q (stderr %q)", out, stderr)
	}

	out, stderr, code = fleetctl(append(args, "-o", "json")...)
	var lines []string
	if err := json.Unmarshal([]byte(out), &lines); code != 0 || err != nil || !slices.Equal(lines, []string{"line 17", "line 18", "line 19"}) {
		t.Errorf("logs -o json: code %d, %q (%v), stderr %q", code, out, err, stderr)
	}

	t.Run("a device that is not connected", func(t *testing.T) {
		_, stderr, code := fleetctl("logs", "--device", "ghost", "--namespace", "logs", "--name", "web")
		if code != exitError || !strings.Contains(stderr, "device ghost is not connected") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})

	t.Run("a device that does not answer", func(t *testing.T) {
		// A device's credentials may serve its own logs subject: this one listens and never answers.
		nc, _, err := srv.ConnectDevice(testCtx, "mute")
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		sub, err := nc.SubscribeSync(fleet.LogsServeSubject("mute"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := fleetctl("logs", "--device", "mute", "--namespace", "logs", "--name", "web", "--timeout", "300ms")
		if code != exitError || !strings.Contains(stderr, "device mute did not answer within 300ms") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})

	t.Run("another device's credentials are refused", func(t *testing.T) {
		creds, err := srv.Creds(auth.RoleDevice, "cam-2")
		if err != nil {
			t.Fatal(err)
		}
		_, stderr, code := fleetctl(append(args, "--creds", creds)...)
		if code != exitError || !strings.Contains(stderr, "permission denied by the NATS server") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})

	t.Run("credentials of another authority are refused", func(t *testing.T) {
		other, err := auth.Init()
		if err != nil {
			t.Fatal(err)
		}
		creds, err := other.Issue(auth.RoleViewer, "eve", 0)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "eve.creds")
		if err := auth.WriteCreds(path, creds); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := fleetctl(append(args, "--creds", path)...)
		if code != exitError || !strings.Contains(stderr, "refused these credentials") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})

	t.Run("usage mistakes", func(t *testing.T) {
		for _, a := range [][]string{
			{"logs", "--device", "a.b", "--namespace", "logs", "--name", "web"},
			{"logs", "--device", "cam-1", "--namespace", "logs"},
			{"logs", "--device", "cam-1", "--namespace", "logs", "--name", "web", "--lines", "10001"},
			{"logs", "--device", "cam-1", "--namespace", "logs", "--name", "web", "-o", "yaml"},
			{"nope"},
		} {
			if _, stderr, code := fleetctl(a...); code != exitUsage {
				t.Errorf("%q: code %d, stderr %q", a, code, stderr)
			}
		}
	})
}

// stateRows runs states with -o json.
func stateRows(t *testing.T, args ...string) []stateRow {
	t.Helper()
	out, stderr, code := fleetctl(append([]string{"states", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("states %q: code %d, stderr %q", args, code, stderr)
	}
	var rows []stateRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("states %q: %v in %q", args, err, out)
	}
	return rows
}

func devicesOf(rows []stateRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Device)
	}
	slices.Sort(out)
	return out
}

// TestStates lists a deployment's devices with their phase and liveness, filtered by labels and phase,
// as the viewer (and refused to a device's credentials).
func TestStates(t *testing.T) {
	// Names of this run only: a run again (-count) must not find the devices and records of the last.
	runs++
	ns := fmt.Sprintf("shop%d", runs)
	d := fleet.DeploymentKey{Namespace: ns, Name: "web"}
	failing := &fleettest.FakeRuntime{}
	failing.SetFail("registry.example/web:3", "image not found")
	startDevice(t, ns+"-a", map[string]string{"site": "lyon"}, nil)
	b := startDevice(t, ns+"-b", map[string]string{"site": "paris"}, nil)
	startDevice(t, ns+"-c", map[string]string{"site": "lyon"}, failing)
	for _, dev := range []string{ns + "-a", ns + "-b", ns + "-c"} {
		if _, err := operator.Publish(testCtx, dev, d, fleet.Desired{Generation: 3, Score: score("registry.example/web:3")}); err != nil {
			t.Fatal(err)
		}
	}
	// Another deployment of the same namespace, whose states must not show.
	if _, err := operator.Transition(testCtx, fleet.DeploymentKey{Namespace: ns, Name: "api"}, ns+"-a", 1, fleet.PhaseRunning, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every device reported", func() bool {
		phases := map[string]fleet.Phase{}
		for _, r := range stateRows(t, "--namespace", ns, "--deployment", "web") {
			phases[r.Device] = r.Phase
		}
		return phases[ns+"-a"] == fleet.PhaseRunning && phases[ns+"-b"] == fleet.PhaseRunning && phases[ns+"-c"] == fleet.PhaseFailed
	})

	rows := stateRows(t, "--namespace", ns, "--deployment", "web")
	if got := devicesOf(rows); !slices.Equal(got, []string{ns + "-a", ns + "-b", ns + "-c"}) {
		t.Errorf("devices = %v", got)
	}
	for _, r := range rows {
		if r.Generation != 3 || r.At.IsZero() || r.Heartbeat.Status != heartbeatAlive || r.Heartbeat.At == nil {
			t.Errorf("row %+v", r)
		}
		if (r.Device == ns+"-c") != (r.Message == "service app: image not found") {
			t.Errorf("row %s has message %q", r.Device, r.Message)
		}
	}
	if got := devicesOf(stateRows(t, "--namespace", ns, "--deployment", "web", "--selector", "site=lyon")); !slices.Equal(got, []string{ns + "-a", ns + "-c"}) {
		t.Errorf("--selector site=lyon: %v", got)
	}
	if got := devicesOf(stateRows(t, "--namespace", ns, "--deployment", "web", "--selector", "site in (lyon,paris),site!=lyon")); !slices.Equal(got, []string{ns + "-b"}) {
		t.Errorf("--selector site in (lyon,paris),site!=lyon: %v", got)
	}
	if got := devicesOf(stateRows(t, "--namespace", ns, "--deployment", "web", "--state", "failed")); !slices.Equal(got, []string{ns + "-c"}) {
		t.Errorf("--state failed: %v", got)
	}
	if got := devicesOf(stateRows(t, "--namespace", ns, "--deployment", "web", "--state", "Failed", "--selector", "site=paris")); len(got) != 0 {
		t.Errorf("--state Failed --selector site=paris: %v", got)
	}

	out, stderr, code := fleetctl("states", "--namespace", ns, "--deployment", "web", "--state", "failed")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "DEVICE GENERATION PHASE AT HEARTBEAT MESSAGE" {
		t.Fatalf("text: code %d, %q, stderr %q", code, out, stderr)
	}
	if f := strings.Fields(lines[1]); len(f) < 8 || f[0] != ns+"-c" || f[1] != "3" || f[2] != "Failed" || f[4] != "alive" ||
		strings.Join(f[6:], " ") != "service app: image not found" || strings.Index(lines[1], "Failed") != strings.Index(lines[0], "PHASE") {
		t.Errorf("text row %q under %q", lines[1], lines[0])
	}

	t.Run("a stopped device's heartbeat expires, then the operator records the lapse", func(t *testing.T) {
		b.Stop()
		var marker uint64
		eventually(t, "the stopped device's heartbeat expired", func() bool {
			for _, r := range stateRows(t, "--namespace", ns, "--deployment", "web", "--selector", "site=paris") {
				if r.Heartbeat.Status == heartbeatExpired {
					return true
				}
			}
			return false
		})
		stream, err := operatorJS.Stream(testCtx, "KV_"+fleet.BucketHeartbeats)
		if err != nil {
			t.Fatal(err)
		}
		m, err := stream.GetLastMsgForSubject(testCtx, "$KV."+fleet.BucketHeartbeats+"."+ns+"-b")
		if err != nil {
			t.Fatal(err)
		}
		marker = m.Sequence
		if err := operator.WriteLapse(testCtx, ns+"-b", marker); err != nil {
			t.Fatal(err)
		}
		rows := stateRows(t, "--namespace", ns, "--deployment", "web", "--selector", "site=paris")
		if len(rows) != 1 || rows[0].Heartbeat.Status != heartbeatLapsed || rows[0].Phase != fleet.PhaseRunning {
			t.Errorf("after the lapse: %+v", rows)
		} else if hb := rows[0].Heartbeat; hb.LastBeat == nil || hb.At == nil || !hb.LastBeat.Before(*hb.At) {
			// The lapsed record dates the last heartbeat: before the lapse was recorded (a TTL before the
			// marker).
			t.Errorf("the lapsed device's last heartbeat: %+v", hb)
		}
	})

	t.Run("a device's credentials may not read the fleet's states", func(t *testing.T) {
		creds, err := srv.Creds(auth.RoleDevice, ns+"-a")
		if err != nil {
			t.Fatal(err)
		}
		_, stderr, code := fleetctl("states", "--namespace", ns, "--deployment", "web", "--creds", creds)
		if code != exitError || !strings.Contains(stderr, "permission denied by the NATS server") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})

	t.Run("usage mistakes", func(t *testing.T) {
		for _, a := range [][]string{
			{"states", "--namespace", ns},
			{"states", "--namespace", ns, "--deployment", "web", "--state", "sleeping"},
			{"states", "--namespace", ns, "--deployment", "web", "--selector", "site in ("},
			{"states", "--namespace", ns, "--deployment", "web", "extra"},
		} {
			if _, stderr, code := fleetctl(a...); code != exitUsage {
				t.Errorf("%q: code %d, stderr %q", a, code, stderr)
			}
		}
	})
}

// TestStatesStreamsALargeDeployment lists more rows than one batch of the watch and one page of text:
// every device shows once, and each page is aligned.
func TestStatesStreamsALargeDeployment(t *testing.T) {
	d := fleet.DeploymentKey{Namespace: "bulk", Name: "web"}
	const n = pageRows + 100
	for i := range n {
		if _, err := operator.Transition(testCtx, d, fmt.Sprintf("dev-%04d", i), 1, fleet.PhasePending, ""); err != nil {
			t.Fatal(err)
		}
	}
	rows := stateRows(t, "--namespace", "bulk", "--deployment", "web")
	if got := devicesOf(rows); len(got) != n || got[0] != "dev-0000" || got[n-1] != fmt.Sprintf("dev-%04d", n-1) || len(slices.Compact(got)) != n {
		t.Errorf("%d rows, want %d distinct", len(got), n)
	}
	for _, r := range rows {
		if r.Heartbeat.Status != heartbeatNone || r.Heartbeat.At != nil {
			t.Fatalf("a device that never beat: %+v", r)
		}
	}
	out, stderr, code := fleetctl("states", "--namespace", "bulk", "--deployment", "web")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != n+1 {
		t.Fatalf("text: code %d, %d lines, stderr %q", code, len(lines), stderr)
	}
	col := strings.Index(lines[0], "PHASE")
	for _, l := range lines[1:] {
		if strings.Index(l, "Pending") != col {
			t.Fatalf("row %q is not aligned under %q", l, lines[0])
		}
	}
}

// TestNoServer says where it could not connect.
func TestNoServer(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(testCtx, []string{"states", "--namespace", "a", "--deployment", "b", "--nats-url", "nats://127.0.0.1:1", "--timeout", "1s"}, &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "connect to nats://127.0.0.1:1") {
		t.Errorf("code %d, stderr %q", code, errb.String())
	}
}

// TestEvents fetches a simulated device's events (all, or one deployment's) and its agent's
// information, as text and as JSON.
func TestEvents(t *testing.T) {
	web, api := fleet.DeploymentKey{Namespace: "ev", Name: "web"}, fleet.DeploymentKey{Namespace: "ev", Name: "api"}
	rt := &fleettest.FakeRuntime{}
	rt.SetFail("registry.example/api:1", "manifest unknown")
	startDevice(t, "ev-1", nil, rt)
	if _, err := operator.Publish(testCtx, "ev-1", web, fleet.Desired{Generation: 2, Score: score("registry.example/web:2")}); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Publish(testCtx, "ev-1", api, fleet.Desired{Generation: 1, Score: score("registry.example/api:1")}); err != nil {
		t.Fatal(err)
	}
	var reply agent.EventsReply
	eventually(t, "ev-1 reports both deployments' events", func() bool {
		out, _, code := fleetctl("events", "--device", "ev-1", "-o", "json")
		reply = agent.EventsReply{}
		if code != 0 || json.Unmarshal([]byte(out), &reply) != nil {
			return false
		}
		reasons := map[string]bool{}
		for _, e := range reply.Events {
			reasons[e.Namespace+"/"+e.Name+" "+e.Reason] = true
		}
		return reasons["ev/web "+agent.ReasonApplied] && reasons["ev/api "+agent.ReasonApplyFailed]
	})
	if reply.Device != "ev-1" || reply.AgentVersion != agent.Version {
		t.Errorf("reply %+v", reply)
	}

	out, stderr, code := fleetctl("events", "--device", "ev-1", "--namespace", "ev", "--name", "api")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 6 || lines[0] != "Device: ev-1" || lines[1] != "Agent: "+agent.Version ||
		strings.Join(strings.Fields(lines[4]), " ") != "TIME SEVERITY REASON DEPLOYMENT COUNT MESSAGE" {
		t.Fatalf("text: code %d, %q, stderr %q", code, out, stderr)
	}
	for _, l := range lines[5:] {
		f := strings.Fields(l)
		if len(f) < 6 || f[3] != "ev/api" {
			t.Errorf("an event of another deployment, or a short row: %q", l)
		}
	}
	if !strings.Contains(out, agent.ReasonApplyFailed) || !strings.Contains(out, "manifest unknown") {
		t.Errorf("no ApplyFailed event with its message in %q", out)
	}

	t.Run("a device that is not connected", func(t *testing.T) {
		_, stderr, code := fleetctl("events", "--device", "ghost")
		if code != exitError || !strings.Contains(stderr, "device ghost is not connected") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})
	t.Run("another device's credentials are refused", func(t *testing.T) {
		creds, err := srv.Creds(auth.RoleDevice, "ev-2")
		if err != nil {
			t.Fatal(err)
		}
		_, stderr, code := fleetctl("events", "--device", "ev-1", "--creds", creds)
		if code != exitError || !strings.Contains(stderr, "permission denied by the NATS server") {
			t.Errorf("code %d, stderr %q", code, stderr)
		}
	})
	t.Run("usage mistakes", func(t *testing.T) {
		for _, a := range [][]string{
			{"events"},
			{"events", "--device", "ev-1", "--namespace", "ev"},
		} {
			if _, stderr, code := fleetctl(a...); code != exitUsage {
				t.Errorf("%q: code %d, stderr %q", a, code, stderr)
			}
		}
	})
}
