// Package fleettest holds the fleet fixtures every test layer shares (the store and agent tests, the
// iot controller's envtest suite, the demo): an in-process NATS server with JetStream on 127.0.0.1, a
// fake container runtime, and simulated devices running the real agent against it.
package fleettest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// Server is an in-process NATS server with JetStream, listening on 127.0.0.1.
type Server struct {
	*server.Server
	dir  string
	opts *server.Options
}

// StartServer starts a NATS server with JetStream storing under a new temporary directory, on a port
// of its choosing. Stop it with Shutdown.
func StartServer() (*Server, error) { return StartServerOn(-1) }

// StartServerOn is StartServer on a given port of 127.0.0.1 (-1: any).
func StartServerOn(port int) (*Server, error) {
	dir, err := os.MkdirTemp("", "fleet-nats-")
	if err != nil {
		return nil, err
	}
	opts := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.Join(errors.New("NATS server not ready in 10s"), os.RemoveAll(dir))
	}
	return &Server{Server: s, dir: dir, opts: opts}, nil
}

// Restart stops the server and starts it again on the same port with the same storage, as a NATS
// restart in production: clients reconnect, JetStream keeps every bucket.
func (s *Server) Restart() error {
	opts := *s.opts
	opts.Port = s.Addr().(*net.TCPAddr).Port
	s.Server.Shutdown()
	s.WaitForShutdown()
	ns, err := server.NewServer(&opts)
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("NATS server not ready in 10s after a restart")
	}
	s.Server = ns
	return nil
}

// Shutdown stops the server and removes its storage.
func (s *Server) Shutdown() {
	s.Server.Shutdown()
	s.WaitForShutdown()
	_ = os.RemoveAll(s.dir)
}

// Connected is a server of one test or benchmark with the operator's side connected to it.
type Connected struct {
	// Ctx ends when the test does.
	Ctx    context.Context
	Server *Server
	Conn   *nats.Conn
	Store  *store.Store
}

// StartConnected starts a server and connects to it (the default heartbeat TTL); the connection, the
// context and the server all end with tb.
func StartConnected(tb testing.TB) Connected {
	tb.Helper()
	srv, err := StartServer()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	nc, st, err := Connect(ctx, srv.ClientURL(), 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return Connected{Ctx: ctx, Server: srv, Conn: nc, Store: st}
}

// Connect opens a client connection and the fleet's buckets (heartbeat TTL ttl, the default when zero).
func Connect(ctx context.Context, url string, ttl time.Duration) (*nats.Conn, *store.Store, error) {
	return connect(url, auth.Client{}, func(js jetstream.JetStream) (*store.Store, error) {
		return store.Open(ctx, js, ttl)
	})
}

// reconnecting are the test connections' options: reconnect forever, quickly.
func reconnecting() []nats.Option {
	return []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}
}

// connect dials url as c says (reconnecting) and opens the fleet's buckets with open (the operator's
// store.Open, or a device's store.Bind); the connection is closed when that fails.
func connect(url string, c auth.Client, open func(jetstream.JetStream) (*store.Store, error)) (*nats.Conn, *store.Store, error) {
	nc, js, err := c.Dial(url, reconnecting()...)
	if err != nil {
		return nil, nil, err
	}
	st, err := open(js)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, st, nil
}

// FakeRuntime is a container runtime in memory: Apply fails for the images in Fail (with their message)
// and otherwise records the score as running.
type FakeRuntime struct {
	mu      sync.Mutex
	Fail    map[string]string
	held    map[string]chan struct{}
	running map[fleet.DeploymentKey]iotv1.Score
	logs    map[fleet.DeploymentKey][]string
	applies int
}

// Apply records the score, or fails for an image in Fail. An Apply of a held image (Hold) waits for its
// release first, or returns ctx's error.
func (f *FakeRuntime) Apply(ctx context.Context, d fleet.DeploymentKey, score iotv1.Score) error {
	f.mu.Lock()
	f.applies++
	if score.PodmanV0 == nil {
		f.mu.Unlock()
		return errors.New("no podmanV0 payload")
	}
	for _, s := range score.PodmanV0.Services {
		if release, ok := f.held[s.Image]; ok {
			f.mu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			f.mu.Lock()
			break
		}
	}
	defer f.mu.Unlock()
	for _, s := range score.PodmanV0.Services {
		if msg, ok := f.Fail[s.Image]; ok {
			return fmt.Errorf("service %s: %s", s.Name, msg)
		}
	}
	if f.running == nil {
		f.running = map[fleet.DeploymentKey]iotv1.Score{}
	}
	f.running[d] = score
	return nil
}

// Applies is how many times Apply was called.
func (f *FakeRuntime) Applies() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applies
}

// AppendLog adds lines to the deployment's log, keeping the newest agent.DefaultLogLines.
func (f *FakeRuntime) AppendLog(d fleet.DeploymentKey, lines ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logs == nil {
		f.logs = map[fleet.DeploymentKey][]string{}
	}
	l := append(f.logs[d], lines...)
	if over := len(l) - agent.DefaultLogLines; over > 0 {
		l = append(l[:0:0], l[over:]...)
	}
	f.logs[d] = l
}

// Logs serves the newest tail lines of the deployment's log.
func (f *FakeRuntime) Logs(_ context.Context, d fleet.DeploymentKey, tail int, line func(string) error) error {
	f.mu.Lock()
	l := f.logs[d]
	l = l[max(len(l)-tail, 0):]
	l = append([]string(nil), l...)
	f.mu.Unlock()
	for _, s := range l {
		if err := line(s); err != nil {
			return err
		}
	}
	return nil
}

// Remove forgets the deployment's score.
func (f *FakeRuntime) Remove(_ context.Context, d fleet.DeploymentKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, d)
	return nil
}

// Running is the score the runtime runs for d, if any.
func (f *FakeRuntime) Running(d fleet.DeploymentKey) (iotv1.Score, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.running[d]
	return s, ok
}

// Hold makes every Apply of image wait until release is called: a device slow to run it, which reports
// Pending meanwhile. Release is idempotent.
func (f *FakeRuntime) Hold(image string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	f.held[image] = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.held[image] == ch {
				delete(f.held, image)
			}
			close(ch)
		})
	}
}

// SetFail makes Apply fail for image (msg non-empty) or succeed again (msg empty).
func (f *FakeRuntime) SetFail(image, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Fail == nil {
		f.Fail = map[string]string{}
	}
	if msg == "" {
		delete(f.Fail, image)
		return
	}
	f.Fail[image] = msg
}

// Device is a simulated device: the real agent with a fake runtime, stoppable and restartable.
type Device struct {
	Info    fleet.DeviceInfo
	Runtime *FakeRuntime
	store   *store.Store
	cancel  context.CancelFunc
	done    chan struct{}
}

// StartDevice runs an agent for a device with these labels.
func StartDevice(ctx context.Context, st *store.Store, id string, labels map[string]string, rt *FakeRuntime) *Device {
	return StartDeviceInfo(ctx, st, fleet.DeviceInfo{ID: id, Labels: labels}, rt)
}

// StartDeviceInfo runs an agent for a device with this record (its ID, labels and credential; the
// inventory is filled in).
func StartDeviceInfo(ctx context.Context, st *store.Store, info fleet.DeviceInfo, rt *FakeRuntime) *Device {
	if rt == nil {
		rt = &FakeRuntime{}
	}
	info.Inventory = fleet.Inventory{Hostname: info.ID, Arch: "arm64", OS: "linux"}
	d := &Device{Info: info, Runtime: rt, store: st}
	d.Start(ctx)
	return d
}

// Start (re)starts the device's agent.
func (d *Device) Start(ctx context.Context) {
	ctx, d.cancel = context.WithCancel(ctx)
	d.done = make(chan struct{})
	a := &agent.Agent{Device: d.Info, Store: d.store, Runtime: d.Runtime, Log: logr.Discard(), RetryAfter: 100 * time.Millisecond}
	go func() {
		defer close(d.done)
		_ = a.Run(ctx)
	}()
}

// Stop stops the device's agent (a power cut: the runtime keeps what it ran) and waits for it to end.
func (d *Device) Stop() {
	d.cancel()
	<-d.done
}

// Deployment is an iot Deployment running one service of image on the devices labelled fleet=<fleet>,
// rolled out at once.
func Deployment(ns, name, fleetLabel, image string) *iotv1.Deployment {
	return &iotv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: iotv1.DeploymentSpec{
			TargetSelector: metav1.LabelSelector{MatchLabels: map[string]string{"fleet": fleetLabel}},
			Score: iotv1.Score{Type: iotv1.ScorePodmanV0, PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{
				Name: "app", Image: image, Ports: []iotv1.Port{{ContainerPort: 8080}},
			}}}},
			Rollout: iotv1.Rollout{Strategy: iotv1.RolloutImmediate},
		},
	}
}

// StartFleet runs n simulated devices named <prefix>-0 ... labelled fleet=<fleetLabel>, each with its
// own fake runtime.
func StartFleet(ctx context.Context, st *store.Store, prefix, fleetLabel string, n int) []*Device {
	out := make([]*Device, 0, n)
	for i := range n {
		out = append(out, StartDevice(ctx, st, fmt.Sprintf("%s-%d", prefix, i), map[string]string{"fleet": fleetLabel}, nil))
	}
	return out
}
