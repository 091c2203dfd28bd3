package fleettest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// NATSServerVar names the nats-server binary the cluster fixture runs (the Makefile exports it:
// bin/nats-server, built from the version go.mod pins).
const NATSServerVar = "NATS_SERVER"

// Cluster is a JetStream cluster of real nats-server processes on 127.0.0.1, each started from the
// configuration the operator generates for its StatefulSet (broker.Render) with the fleet's permission
// model (auth.Init), on ports of its own and a directory of its own. Kill and Restart keep a server's
// ports and storage, as a pod's restart keeps its name and claim.
type Cluster struct {
	// Dir holds each server's configuration, storage and log, and the issued credentials.
	Dir       string
	Authority *auth.Authority
	// OperatorCreds is the operator's .creds file.
	OperatorCreds string
	// Name is the JetStream cluster's name.
	Name string

	bin     string
	servers []*clusterServer
	admin   struct {
		jwt  string
		seed []byte
	}
	adminMu   sync.Mutex
	adminConn *nats.Conn
	adminJet  jetstream.JetStream
}

// clusterServer is one server of a Cluster.
type clusterServer struct {
	name                  string
	client, route, health int
	dir, conf, log        string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// NATSServerBinary is the nats-server binary to run: $NATS_SERVER, or bin/nats-server of the module
// the tests run in. It fails when neither exists, or when the binary is not the version go.mod pins
// (the in-process servers and the processes must be the same code).
func NATSServerBinary() (string, error) {
	bin := os.Getenv(NATSServerVar)
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(root, "bin", "nats-server")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("the fleet's cluster tests run real nats-server processes and found none at %s: "+
			"run `make nats-server` (it builds bin/nats-server from the version go.mod pins) or set %s", bin, NATSServerVar)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	if want := pinnedNATSServer(); want != "" && !strings.Contains(string(out), want) {
		return "", fmt.Errorf("%s is %s, but go.mod pins nats-server %s: run `make nats-server`", bin, strings.TrimSpace(string(out)), want)
	}
	return bin, nil
}

// pinnedNATSServer is the version of github.com/nats-io/nats-server/v2 this binary was built with.
func pinnedNATSServer() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/nats-io/nats-server/v2" {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

// moduleRoot is the directory of the go.mod above the working directory (a test runs in its package's
// directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory; set %s", NATSServerVar)
		}
		dir = parent
	}
}

// StartCluster starts a cluster of n servers (3 for the fleet's broker) and waits until JetStream has a
// meta leader; it stops with tb, and on failure prints each server's log tail.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c, err := StartClusterServers(n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for i := range c.servers {
				tb.Logf("nats-server %s log (tail):\n%s", c.servers[i].name, c.LogTail(i, 30))
			}
			// The logs stay for a look: the servers are killed, their directories kept.
			c.Stop()
			tb.Logf("the cluster's directory (configuration, storage, logs) is kept: %s", c.Dir)
			return
		}
		c.Shutdown()
	})
	return c
}

// StartClusterServers is StartCluster for a caller without a testing.TB (the bench): stop it with
// Shutdown, which removes its directory.
func StartClusterServers(n int) (*Cluster, error) {
	bin, err := NATSServerBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fleet-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Name: "fleet", bin: bin}
	fail := func(err error) (*Cluster, error) {
		c.Shutdown()
		return nil, err
	}
	if c.Authority, err = auth.Init(); err != nil {
		return fail(err)
	}
	ports, err := freePorts(3 * n)
	if err != nil {
		return fail(err)
	}
	routes := make([]string, n)
	for i := range n {
		s := &clusterServer{name: fmt.Sprintf("%s-%d", c.Name, i), client: ports[3*i], route: ports[3*i+1], health: ports[3*i+2]}
		s.dir = filepath.Join(dir, s.name)
		s.conf, s.log = filepath.Join(s.dir, "nats.conf"), filepath.Join(s.dir, "server.log")
		routes[i] = fmt.Sprintf("127.0.0.1:%d", s.route)
		c.servers = append(c.servers, s)
	}
	for _, s := range c.servers {
		conf, err := broker.Render(broker.Config{
			Cluster: c.Name, Client: fmt.Sprintf("127.0.0.1:%d", s.client), Route: fmt.Sprintf("127.0.0.1:%d", s.route),
			Monitor: fmt.Sprintf("127.0.0.1:%d", s.health), Routes: routes, RouteUser: "route", RoutePassword: "routeSecret",
			StoreDir: filepath.Join(s.dir, "jetstream"), ResolverDir: filepath.Join(s.dir, "jwt"),
		}, c.Authority)
		if err != nil {
			return fail(err)
		}
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			return fail(err)
		}
	}
	for i := range c.servers {
		if err := c.start(i); err != nil {
			return fail(err)
		}
	}
	if err := c.issueAdmin(); err != nil {
		return fail(err)
	}
	if c.OperatorCreds, err = c.Creds(auth.RoleOperator, auth.OperatorUser, nil); err != nil {
		return fail(err)
	}
	if err := c.WaitReady(60 * time.Second); err != nil {
		return fail(err)
	}
	return c, nil
}

// freePorts are n distinct ports of 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// start runs server i's process (its log appended to server.log) and waits for its client port.
func (c *Cluster) start(i int) error {
	s := c.servers[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("server %s is running", s.name)
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.bin, "-c", s.conf)
	cmd.Env = append(os.Environ(), broker.ServerNameVar+"="+s.name)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a test's ^C does not reach it before Shutdown does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.client), time.Second)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited at start:\n%s", s.name, c.LogTail(i, 20))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not listen on %d after 20s:\n%s", s.name, s.client, c.LogTail(i, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Servers is how many servers the cluster has.
func (c *Cluster) Servers() int { return len(c.servers) }

// ServerName is server i's name (its SERVER_NAME, what stream info names leaders and replicas by).
func (c *Cluster) ServerName(i int) string { return c.servers[i].name }

// ServerIndex is the index of the server named name, or -1.
func (c *Cluster) ServerIndex(name string) int {
	for i, s := range c.servers {
		if s.name == name {
			return i
		}
	}
	return -1
}

// ClientURL is server i's client URL.
func (c *Cluster) ClientURL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.servers[i].client)
}

// ClientURLs are every server's client URL, comma-separated, as a client is given them (nats.Connect
// picks one at random and reconnects to another when it goes).
func (c *Cluster) ClientURLs() string {
	urls := make([]string, len(c.servers))
	for i := range c.servers {
		urls[i] = c.ClientURL(i)
	}
	return strings.Join(urls, ",")
}

// Running says whether server i's process runs.
func (c *Cluster) Running(i int) bool {
	s := c.servers[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Kill kills server i with SIGKILL (no shutdown, no flush: a node lost) and waits for the process to end.
func (c *Cluster) Kill(i int) error {
	s := c.servers[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("server %s is not running", s.name)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-s.done
	s.cmd = nil
	return nil
}

// Restart starts killed server i again, on the same ports with the same storage.
func (c *Cluster) Restart(i int) error { return c.start(i) }

// Healthy says whether server i answers its health check with JetStream current (/healthz: the probe
// the StatefulSet uses).
func (c *Cluster) Healthy(i int) bool {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", c.servers[i].health))
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady waits until every running server is healthy and the cluster answers a JetStream request
// (a meta leader is elected).
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i := range c.servers {
		for c.Running(i) && !c.Healthy(i) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not healthy after %s:\n%s", c.servers[i].name, timeout, c.LogTail(i, 20))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	js, err := c.adminJS()
	if err != nil {
		return err
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("JetStream does not answer after %s: %w", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Shutdown kills every server and removes the cluster's directory.
func (c *Cluster) Shutdown() {
	c.Stop()
	_ = os.RemoveAll(c.Dir)
}

// Stop kills every server and closes the administrator's connection; the directory stays.
func (c *Cluster) Stop() {
	c.adminMu.Lock()
	if c.adminConn != nil {
		c.adminConn.Close()
	}
	c.adminMu.Unlock()
	for i := range c.servers {
		if c.Running(i) {
			_ = c.Kill(i)
		}
	}
}

// LogTail is the last n lines of server i's log.
func (c *Cluster) LogTail(i, n int) string {
	f, err := os.Open(c.servers[i].log)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Creds issues the credentials of a user of role r named name (with credential labels) into a .creds
// file, and returns its path.
func (c *Cluster) Creds(r auth.Role, name string, labels map[string]string) (string, error) {
	creds, err := c.Authority.IssueWithLabels(r, name, 0, labels)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, "creds", string(r)+"-"+name+".creds")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, auth.WriteCreds(path, creds)
}

// ConnectOperator connects with the operator's credentials to every server's URL (reconnecting
// forever) and opens the buckets with limits, as the operator does (controllers/iot.Connect).
func (c *Cluster) ConnectOperator(ctx context.Context, ttl time.Duration, limits store.Limits) (*nats.Conn, *store.Store, error) {
	return connect(c.ClientURLs(), auth.Client{CredentialsFile: c.OperatorCreds}, func(js jetstream.JetStream) (*store.Store, error) {
		return store.OpenWithLimits(ctx, js, ttl, limits)
	})
}

// StartDevice runs a simulated device (the real agent, a fake runtime) on a connection of its own to
// every server's URL, with the device's own credentials and credential labels, as Authorized.StartDevice
// does on a single server. The connection closes when ctx ends.
func (c *Cluster) StartDevice(ctx context.Context, id string, labels map[string]string, rt *FakeRuntime) (*Device, error) {
	return c.StartDeviceBind(ctx, ctx, id, labels, rt)
}

// StartDeviceBind is StartDevice with the buckets bound under bindCtx (a timeout of the caller's: a
// request in flight when its server dies is never answered) and the agent run under ctx.
func (c *Cluster) StartDeviceBind(ctx, bindCtx context.Context, id string, labels map[string]string, rt *FakeRuntime) (*Device, error) {
	creds, err := c.Creds(auth.RoleDevice, id, labels)
	if err != nil {
		return nil, err
	}
	token, err := auth.CredentialJWT(creds)
	if err != nil {
		return nil, err
	}
	nc, st, err := connect(c.ClientURLs(), auth.Client{CredentialsFile: creds}, func(js jetstream.JetStream) (*store.Store, error) {
		return store.Bind(bindCtx, js)
	})
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", id, err)
	}
	context.AfterFunc(ctx, nc.Close)
	return StartDeviceInfo(ctx, st, fleet.DeviceInfo{ID: id, Labels: labels, Credential: token}, rt), nil
}

// issueAdmin makes the cluster's administrator: a user of the fleet account signed by the account's
// own key with explicit permissions (the account's default permissions, which deny everything, apply
// only to users without any), allowed what the operator's role is not: to read any stream's cluster
// state and to ask a stream's leader to step down. It stands for the person who runs
// `nats stream cluster step-down`.
func (c *Cluster) issueAdmin() error {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return err
	}
	pub, _ := kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "cluster-admin"
	uc.Pub.Allow.Add("$JS.API.INFO", "$JS.API.STREAM.INFO.>", "$JS.API.STREAM.LEADER.STEPDOWN.>", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES")
	uc.Sub.Allow.Add("_INBOX.>")
	if c.admin.jwt, err = uc.Encode(c.Authority.Account); err != nil {
		return fmt.Errorf("sign the cluster administrator: %w", err)
	}
	c.admin.seed, err = kp.Seed()
	return err
}

// Admin connects as the cluster's administrator (issueAdmin) to every server's URL.
func (c *Cluster) Admin() (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(c.ClientURLs(), append(reconnecting(), nats.UserJWTAndSeed(c.admin.jwt, string(c.admin.seed)))...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect as the cluster administrator: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// StreamInfo is the stream's information with its cluster state (leader, replicas, their lag), asked
// for with a timeout of its own of 3 seconds (a stream without a leader answers nothing).
func (c *Cluster) StreamInfo(ctx context.Context, stream string) (*jetstream.StreamInfo, error) {
	js, err := c.adminJS()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	return s.CachedInfo(), nil
}

// adminJS is the cluster administrator's connection, opened once and closed by Shutdown.
func (c *Cluster) adminJS() (jetstream.JetStream, error) {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	if c.adminConn == nil {
		nc, js, err := c.Admin()
		if err != nil {
			return nil, err
		}
		c.adminConn, c.adminJet = nc, js
	}
	return c.adminJet, nil
}

// Leader is the name of the server that leads stream ("" while it has none).
func (c *Cluster) Leader(ctx context.Context, stream string) (string, error) {
	si, err := c.StreamInfo(ctx, stream)
	if err != nil {
		return "", err
	}
	if si.Cluster == nil {
		return "", fmt.Errorf("stream %s has no cluster information", stream)
	}
	return si.Cluster.Leader, nil
}

// StepDown asks stream's leader to step down (`$JS.API.STREAM.LEADER.STEPDOWN.<stream>`, what
// `nats stream cluster step-down` sends) and waits until another server leads it; it returns the old
// and the new leader.
func (c *Cluster) StepDown(ctx context.Context, stream string) (from, to string, err error) {
	if _, err := c.adminJS(); err != nil {
		return "", "", err
	}
	if from, err = c.Leader(ctx, stream); err != nil {
		return "", "", err
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := c.adminConn.RequestWithContext(rctx, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil)
	if err != nil {
		return from, "", fmt.Errorf("step down the leader of %s: %w", stream, err)
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return from, "", fmt.Errorf("step down the leader of %s: %w", stream, err)
	}
	if !resp.Success {
		desc := string(msg.Data)
		if resp.Error != nil {
			desc = resp.Error.Description
		}
		return from, "", fmt.Errorf("step down the leader of %s: %s", stream, desc)
	}
	for {
		to, err = c.Leader(ctx, stream)
		if err == nil && to != "" && to != from {
			return from, to, nil
		}
		select {
		case <-ctx.Done():
			return from, to, fmt.Errorf("%s still led by %q: %w", stream, to, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Current says whether every replica of stream is current (caught up with its leader) and present:
// the leader and n-1 followers.
func (c *Cluster) Current(ctx context.Context, stream string) (bool, error) {
	si, err := c.StreamInfo(ctx, stream)
	if err != nil {
		return false, err
	}
	if si.Cluster == nil || si.Cluster.Leader == "" || len(si.Cluster.Replicas) != si.Config.Replicas-1 {
		return false, nil
	}
	for _, r := range si.Cluster.Replicas {
		if !r.Current || r.Offline || r.Lag > 0 {
			return false, nil
		}
	}
	return true, nil
}

// MonitorURL is server i's HTTP monitoring address (/healthz, /varz, /jsz).
func (c *Cluster) MonitorURL(i int) string {
	return fmt.Sprintf("http://127.0.0.1:%d", c.servers[i].health)
}
