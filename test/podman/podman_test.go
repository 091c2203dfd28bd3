package podman

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// The podman settings this machine needs (docs/iot.md): crun fails here, and runc needs explicit ulimits.
var (
	// tester is the requester the test names in its log and events requests (its server enforces no
	// permissions).
	tester     = fleet.Requester{Role: "user", Name: "podman-test"}
	ociRuntime = "runc"
	ulimits    = []string{"nofile=1024:1024", "nproc=1024:1024"}
)

// app is the containers' program: a line per second, until it is stopped.
const app = `package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	for i := 0; ; i++ {
		fmt.Printf("hello from %s, line %d\n", os.Args[1], i)
		time.Sleep(time.Second)
	}
}
`

func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("podman", append([]string{"--runtime", ociRuntime}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// buildImages builds app statically and imports it twice, as tags v1 and v2 that differ in what they
// print; each is removed when the test ends.
func buildImages(t *testing.T, repo string) (v1, v2 string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"main.go": app, "go.mod": "module app\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-o", "app", ".")
	build.Dir, build.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the containers' program: %v: %s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "app"))
	if err != nil {
		t.Fatal(err)
	}
	var rootfs bytes.Buffer
	tw := tar.NewWriter(&rootfs)
	if err := tw.WriteHeader(&tar.Header{Name: "app", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(dir, "rootfs.tar")
	if err := os.WriteFile(tarPath, rootfs.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v1", "v2"} {
		ref := repo + ":" + v
		podman(t, "import", "--quiet", "--change", fmt.Sprintf(`CMD ["/app", %q]`, v), tarPath, ref)
		t.Cleanup(func() { _ = exec.Command("podman", "rmi", "--force", ref).Run() })
	}
	return repo + ":v1", repo + ":v2"
}

// states hands the test every record of one state key, as the operator's watch sees them.
func states(ctx context.Context, t *testing.T, kv jetstream.KeyValue, key string) <-chan *fleet.State {
	t.Helper()
	w, err := kv.Watch(ctx, key, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan *fleet.State, 64)
	go func() {
		defer func() { _ = w.Stop() }()
		for e := range w.Updates() {
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			if s, err := fleet.DecodeState(e.Value()); err == nil {
				out <- s
			}
		}
	}()
	return out
}

// next is the key's next record, failing the test if none comes within 30 seconds.
func next(t *testing.T, ch <-chan *fleet.State, what string) *fleet.State {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(30 * time.Second):
		t.Fatalf("no state record: %s", what)
	}
	return nil
}

// TestAgentWithRealPodman is the agent's whole life with real containers: run, upgrade, drift repaired
// after `podman rm -f` and `podman stop` behind its back (reported non-Running until repaired), logs and
// events over NATS, removal. It fails, never skips, when podman is missing: `make podman` installs it.
func TestAgentWithRealPodman(t *testing.T) {
	for _, tool := range []string{"podman", ociRuntime} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (%v): `make podman` installs podman and runc", tool, err)
		}
	}
	tag := fmt.Sprintf("e2e%d", os.Getpid())
	imgV1, imgV2 := buildImages(t, "localhost/fleet-agent-e2e-"+tag)
	d := fleet.DeploymentKey{Namespace: "podman-e2e", Name: tag}
	const device = "podman-e2e"
	container := agent.ContainerName(d, "app")
	t.Cleanup(func() { _ = exec.Command("podman", "rm", "--force", "--ignore", container).Run() })

	f := fleettest.StartConnected(t)
	ctx, cancel := context.WithCancel(f.Ctx)
	rec := states(ctx, t, f.Store.State, fleet.StateKey(d, device))
	a := &agent.Agent{Device: fleet.DeviceInfo{ID: device}, Store: f.Store, Log: logr.Discard(), RetryAfter: 100 * time.Millisecond,
		ReconcileInterval: time.Second, Runtime: &agent.Podman{OCIRuntime: ociRuntime, Ulimits: ulimits}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	t.Cleanup(func() {
		// What the agent saw, when the test failed: its events.
		if !t.Failed() {
			return
		}
		if r, err := agent.RequestEvents(context.Background(), f.Conn, tester, device, fleet.DeploymentKey{}); err == nil {
			for _, e := range r.Events {
				t.Logf("agent event %s %s %s/%s %s: %s (x%d)", e.Time.Format(time.StampMilli), e.Severity, e.Namespace, e.Name, e.Reason, e.Message, e.Count)
			}
		}
	})

	publish := func(gen int64, image string) {
		t.Helper()
		sc := iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{Name: "app", Image: image}}}}
		if _, err := f.Store.Publish(ctx, device, d, fleet.Desired{Generation: gen, Score: sc}); err != nil {
			t.Fatal(err)
		}
	}
	running := func(gen int64, what string) {
		t.Helper()
		for {
			s := next(t, rec, what)
			if s.Phase == fleet.PhaseFailed {
				t.Fatalf("%s: Failed: %s", what, s.Message)
			}
			if s.Phase == fleet.PhaseRunning && s.Generation == gen {
				return
			}
		}
	}
	// logLine waits for a line of the container's log through RequestLogs that contains want.
	logLine := func(want string) {
		t.Helper()
		var last []string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			last = nil
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
			err := agent.RequestLogs(rctx, f.Conn, tester, device, d, 5, func(l string) { last = append(last, l) })
			rcancel()
			if err == nil && slices.ContainsFunc(last, func(l string) bool { return strings.HasPrefix(l, container+" | ") && strings.Contains(l, want) }) {
				return
			}
		}
		t.Fatalf("no log line %q; the last lines: %q", want, last)
	}

	t.Log("run v1")
	publish(1, imgV1)
	running(1, "v1 runs")
	if got := podman(t, "container", "inspect", "--format", "{{.ImageName}} {{.State.Running}}", container); got != imgV1+" true" {
		t.Fatalf("after v1: %s", got)
	}
	logLine("hello from v1")

	t.Log("upgrade to v2")
	publish(2, imgV2)
	running(2, "v2 runs")
	if got := podman(t, "container", "inspect", "--format", "{{.ImageName}} {{.State.Running}}", container); got != imgV2+" true" {
		t.Fatalf("after the upgrade: %s", got)
	}
	logLine("hello from v2")

	for _, drift := range []struct {
		args    []string
		reasons []string
	}{
		// Removal: the agent may look between the container's death and its removal.
		{[]string{"rm", "--force", container}, []string{agent.ReasonContainerMissing, agent.ReasonContainerExited}},
		{[]string{"stop", "--time", "1", container}, []string{agent.ReasonContainerExited}},
	} {
		t.Logf("podman %s behind the agent's back", drift.args[0])
		id := podman(t, "container", "inspect", "--format", "{{.Id}}", container)
		if out, err := exec.Command("podman", append([]string{"--runtime", ociRuntime}, drift.args...)...).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "refusing to clean up") {
			// podman stop's cleanup after the container died may find it running again already: the agent
			// saw it die (podman events) and started it. Anything else is a failure.
			t.Fatalf("podman %s: %v: %s", strings.Join(drift.args, " "), err, out)
		}
		s := next(t, rec, "the drift")
		if s.Phase == fleet.PhaseRunning || !slices.ContainsFunc(drift.reasons, func(r string) bool { return strings.Contains(s.Message, r) }) {
			t.Fatalf("after podman %s: %+v, want a non-Running record saying %v", drift.args[0], s, drift.reasons)
		}
		running(2, "repaired")
		got := podman(t, "container", "inspect", "--format", "{{.ImageName}} {{.State.Running}} {{.Id}}", container)
		if !strings.HasPrefix(got, imgV2+" true ") {
			t.Fatalf("after the repair: %s", got)
		}
		if removed := drift.args[0] == "rm"; removed == strings.HasSuffix(got, id) {
			t.Errorf("podman %s: the repaired container is %s, the old one %s", drift.args[0], got, id)
		}
	}

	t.Log("events over NATS")
	r, err := agent.RequestEvents(ctx, f.Conn, tester, device, d)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range r.Events {
		reasons = append(reasons, e.Reason)
	}
	for _, want := range []string{agent.ReasonApplied, agent.ReasonContainerExited, agent.ReasonRepaired} {
		if !slices.Contains(reasons, want) {
			t.Errorf("the events %v lack %s", reasons, want)
		}
	}
	if r.LastHeartbeatAt == nil || r.AgentVersion != agent.Version {
		t.Errorf("the agent's information: heartbeat %v, version %q", r.LastHeartbeatAt, r.AgentVersion)
	}

	t.Log("withdraw")
	if err := f.Store.Withdraw(ctx, device, d); err != nil {
		t.Fatal(err)
	}
	if s := next(t, rec, "Removed"); s.Phase != fleet.PhaseRemoved {
		t.Fatalf("after the withdrawal: %+v", s)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := agent.RequestEvents(ctx, f.Conn, tester, device, d)
		if err == nil && len(r.Events) > 0 && r.Events[len(r.Events)-1].Reason == agent.ReasonRemoved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never removed the containers: %+v %v", r, err)
		}
	}
	if left := podman(t, "ps", "--all", "--filter", "label="+agent.LabelDeployment+"="+d.Namespace+"."+d.Name, "--format", "{{.Names}}"); left != "" {
		t.Errorf("containers left after the withdrawal: %s", left)
	}
}
