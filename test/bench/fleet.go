package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// The fleet workload (-workloads=fleet) is not a Workload: its objects are devices in NATS, not
// Kubernetes objects. A simulator plays N devices' agents against an in-process NATS server on
// 127.0.0.1 (the fake runtime: a device runs whatever it is given), writing their records through a few
// connections and workers (not a goroutine or connection per device: the operator sees the same KV
// writes), while the real operator binary runs one iot Deployment selecting all of them. The server
// enforces the fleet's permissions as shipped (fleettest.StartAuthorizedServer) and the operator runs
// with the operator's credentials, so the figures are the operator's with permission checks on; the
// simulator's few connections use the operator's credentials too (a device's would allow one device),
// so the devices' side is not measured with per-device credentials.
const fleetName = "fleet"

// fleetOptions are the fleet workload's flags.
type fleetOptions struct {
	Sizes []int
	// Servers are the NATS server counts each size runs on: 1 (an in-process server) and 3 (a
	// JetStream cluster of nats-server processes with R3 buckets, fleettest.Cluster).
	Servers     []int
	Batch       int
	Connections int
	Workers     int
	Timeout     time.Duration
}

var (
	fleetOpts    = fleetOptions{Sizes: []int{10_000, 100_000}, Servers: []int{1, 3}, Batch: 1000, Connections: 4, Workers: 64, Timeout: 10 * time.Minute}
	fleetSizes   string
	fleetServers string
	// fleetReport is what the fleet run measured, for render.
	fleetReport *fleetResults
)

func init() {
	flag.StringVar(&fleetSizes, "fleet-sizes", "10000,100000", "Fleet: numbers of simulated devices, one run each.")
	flag.StringVar(&fleetServers, "fleet-servers", "1,3", "Fleet: NATS server counts each size runs on: 1 (in-process) and 3 (a JetStream cluster of nats-server processes, R3 buckets; needs bin/nats-server).")
	flag.IntVar(&fleetOpts.Batch, "fleet-batch", 1000, "Fleet: devices whose state changes at once in the status-latency measurement.")
	flag.IntVar(&fleetOpts.Connections, "fleet-connections", 4, "Fleet: NATS connections the simulated devices share.")
	flag.IntVar(&fleetOpts.Workers, "fleet-workers", 64, "Fleet: concurrent writers the simulated devices share.")
	flag.DurationVar(&fleetOpts.Timeout, "fleet-timeout", 10*time.Minute, "Fleet: longest wait for one convergence.")
}

// takeFleet takes the fleet workload out of a -workloads list: the rest (for selectWorkloads: empty when
// the fleet alone was asked for), and whether the fleet runs.
func takeFleet(names string) (string, bool) {
	if s := strings.TrimSpace(names); s == "" || s == "all" {
		return "all", true
	}
	var rest []string
	found := false
	for _, n := range strings.Split(names, ",") {
		if strings.TrimSpace(n) == fleetName {
			found = true
			continue
		}
		rest = append(rest, n)
	}
	return strings.Join(rest, ","), found
}

// fleetResults are the fleet workload's figures, one point per size.
type fleetResults struct {
	Opts   fleetOptions
	Points []fleetPoint
}

// fleetPoint is one fleet size's figures.
type fleetPoint struct {
	N int
	// Servers is how many NATS servers the fleet ran on (3: a cluster with R3 buckets).
	Servers int
	// Register is how long the simulator took to write N device records and heartbeats.
	Register time.Duration
	// Converge is from the Deployment's create to the status saying succeeded = N.
	Converge time.Duration
	// Transitions are the state records written during convergence; Msgs the messages through the NATS
	// server meanwhile (in: published to it; out: delivered by it), everything included.
	Transitions     int
	MsgsIn, MsgsOut float64
	// Batch devices fail at once, then recover: BatchWritten is how long writing each batch took,
	// Reflected how long from its last write to a status that shows all of it.
	Batch                          int
	FailWritten, FailReflected     time.Duration
	RecoverWritten, RecoverReflect time.Duration
	// StatusWrites are the Deployment's status updates seen by the bench's watch during the run.
	StatusWrites int
	// Mem is the operator after convergence and the batches, after a forced GC.
	Mem memory
	// Naive is one recount of every device as the reference did per tick: the state of every device and
	// every device record read and decoded (by the bench, against the same server).
	NaiveTick  time.Duration
	NaiveAlloc float64
	NaiveMsgs  float64
}

// runFleet measures the fleet at every size; its figures go into fleetReport.
func runFleet(ctx context.Context, c *config, o fleetOptions) (*fleetResults, error) {
	res := &fleetResults{Opts: o}
	logDir := filepath.Join(c.LogDir, fleetName)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	servers := o.Servers
	if len(servers) == 0 {
		servers = []int{1}
	}
	for _, k := range servers {
		for _, n := range o.Sizes {
			p, err := fleetPointRun(ctx, c, o, logDir, n, k)
			if err != nil {
				return res, fmt.Errorf("fleet, N=%d on %d servers: %w", n, k, err)
			}
			c.logf("fleet N=%d on %d servers: converged in %s, batch of %d reflected in %s / %s, live heap %.1f MiB, naive tick %s",
				n, k, p.Converge.Round(time.Millisecond), p.Batch, p.FailReflected.Round(time.Millisecond),
				p.RecoverReflect.Round(time.Millisecond), p.Mem.HeapAlloc/(1<<20), p.NaiveTick.Round(time.Millisecond))
			res.Points = append(res.Points, p)
		}
	}
	return res, nil
}

// batchQuiet comes before each batch: the Deployment's last status write is older than the operator's
// one-second limit, so that the figure is the batch's own latency, not the limit's.
const batchQuiet = 2 * time.Second

// memReadings is how many times the operator's memory is read; the least reading is reported.
const memReadings = 3

// fleetHeartbeatTTL outlasts any one run, so that no simulated device goes stale while it runs: the
// simulator writes one heartbeat per device.
const fleetHeartbeatTTL = time.Hour

func fleetPointRun(ctx context.Context, c *config, o fleetOptions, logDir string, n, servers int) (fleetPoint, error) {
	p := fleetPoint{N: n, Servers: servers, Batch: min(o.Batch, n)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	srv, err := startFleetNATS(servers)
	if err != nil {
		return p, err
	}
	defer srv.shutdown()
	sim, err := newSimulator(ctx, srv, o)
	if err != nil {
		return p, err
	}
	defer sim.close()

	start := time.Now()
	if err := sim.register(ctx, n); err != nil {
		return p, fmt.Errorf("register devices: %w", err)
	}
	p.Register = time.Since(start)
	c.logf("fleet N=%d: %d devices registered in %s", n, n, p.Register.Round(time.Millisecond))

	cl := localcluster.New(localcluster.Options{RepoRoot: c.RepoRoot, LogDir: filepath.Join(logDir, fmt.Sprintf("cluster-%d", n))})
	if err := cl.Start(ctx); err != nil {
		return p, fmt.Errorf("start control plane: %w", err)
	}
	defer func() { _ = cl.Stop() }()
	cfg := cl.Config()
	cfg.QPS, cfg.Burst = -1, 0
	kc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return p, err
	}
	if err := createNamespace(ctx, kc, benchNamespace); err != nil {
		return p, err
	}
	lop, err := localcluster.StartOperator(ctx, localcluster.OperatorOptions{
		Binary: c.Operator, Kubeconfig: cl.KubeconfigPath(), Name: fmt.Sprintf("fleet-%d-%d", n, servers), LogDir: logDir,
		// The bench's Deployments target every simulated device: its namespace is allowed that.
		Args: append([]string{"--nats-url=" + srv.url(), "--nats-credentials-file=" + srv.operatorCreds(),
			"--nats-heartbeat-ttl=" + fleetHeartbeatTTL.String(), "--iot-fleet-policy=" + benchNamespace + "=*",
			fmt.Sprintf("--iot-fleet-replicas=%d", srv.replicas())}, c.Args...),
		Env: []string{"RELATED_IMAGE_ERGO=" + ergoImage}, Pprof: true, StopTimeout: operatorStopTimeout,
	})
	if err != nil {
		return p, err
	}
	defer func() { _ = lop.Stop() }()
	op := &operator{Operator: lop, controllers: []string{"iotdeployment"}}
	if err := srv.afterOperator(ctx, lop.LogPath, fleetHeartbeatTTL); err != nil {
		return p, err
	}

	feed, err := watchDeployment(ctx, kc)
	if err != nil {
		return p, err
	}
	defer feed.stop()
	go sim.follow(ctx)

	d := fleettest.Deployment(benchNamespace, "fleet", "bench", "registry.example/app:1")
	v0 := srv.varz()
	w0 := sim.written()
	start = time.Now()
	converged := feed.when(func(a iotv1.Aggregate, gen, observed int64) bool { return observed == gen && a.Succeeded == int32(n) })
	if err := kc.Create(ctx, d); err != nil {
		return p, err
	}
	at, err := await(ctx, converged, o.Timeout, op, sim)
	if err != nil {
		return p, fmt.Errorf("converge: %w", err)
	}
	p.Converge = at.Sub(start)
	v1 := srv.varz()
	p.Transitions = int(sim.written() - w0)
	p.MsgsIn, p.MsgsOut = float64(v1.InMsgs-v0.InMsgs), float64(v1.OutMsgs-v0.OutMsgs)

	// A batch of devices fails, then recovers: the time from the batch's last write to the status.
	batch := sim.devices[:p.Batch]
	time.Sleep(batchQuiet)
	failed := feed.when(func(a iotv1.Aggregate, _, _ int64) bool {
		return a.Failed == int32(p.Batch) && a.Succeeded == int32(n-p.Batch)
	})
	written, wrote, err := sim.move(ctx, batch, fleet.PhaseFailed, "bench: simulated failure")
	if err != nil {
		return p, err
	}
	if at, err = await(ctx, failed, o.Timeout, op, sim); err != nil {
		return p, fmt.Errorf("batch failure: %w", err)
	}
	p.FailWritten, p.FailReflected = written, max(at.Sub(wrote), 0)
	time.Sleep(batchQuiet)
	recovered := feed.when(func(a iotv1.Aggregate, _, _ int64) bool { return a.Failed == 0 && a.Succeeded == int32(n) })
	if written, wrote, err = sim.move(ctx, batch, fleet.PhaseRunning, ""); err != nil {
		return p, err
	}
	if at, err = await(ctx, recovered, o.Timeout, op, sim); err != nil {
		return p, fmt.Errorf("batch recovery: %w", err)
	}
	p.RecoverWritten, p.RecoverReflect = written, max(at.Sub(wrote), 0)
	p.StatusWrites = feed.updates()

	// The least of three readings 2s apart: a reading can catch NATS messages the operator's client has
	// received and not yet handed to a watch, which are in flight, not kept.
	for i := range memReadings {
		time.Sleep(2 * time.Second)
		m, err := op.memory(ctx)
		if err != nil {
			return p, err
		}
		if i == 0 || m.HeapAlloc < p.Mem.HeapAlloc {
			p.Mem = m
		}
	}
	c.logf("fleet N=%d: %s", n, op.metricsSize(ctx))
	if err := op.saveHeapProfile(ctx, filepath.Join(logDir, fmt.Sprintf("heap-%d.pb.gz", n))); err != nil {
		return p, err
	}

	// The reference's way, for comparison: a recount of every device per tick.
	v2 := srv.varz()
	p.NaiveTick, p.NaiveAlloc, err = naiveTick(ctx, sim.st, fleet.DeploymentKey{Namespace: d.Namespace, Name: d.Name}, n)
	if err != nil {
		return p, fmt.Errorf("naive recount: %w", err)
	}
	v3 := srv.varz()
	p.NaiveMsgs = float64(v3.OutMsgs - v2.OutMsgs)
	return p, nil
}

// await waits for reached, failing early when the operator exits or the simulator failed.
func await(ctx context.Context, reached <-chan time.Time, timeout time.Duration, op *operator, sim *simulator) (time.Time, error) {
	deadline := time.After(timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case at := <-reached:
			return at, nil
		case <-deadline:
			return time.Time{}, fmt.Errorf("not reached in %s (operator log: %s)\n%s", timeout, op.LogPath, op.Tail(20))
		case <-tick.C:
			if err := op.exited(); err != nil {
				return time.Time{}, err
			}
			if err := sim.failed(); err != nil {
				return time.Time{}, err
			}
		}
	}
}

// naiveTick reads and decodes every device's state for d and every device record, counting phases and
// matches as a recount per tick would; it returns how long that took and the bytes it allocated.
func naiveTick(ctx context.Context, st *store.Store, d fleet.DeploymentKey, n int) (time.Duration, float64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	counts := map[fleet.Phase]int{}
	w, err := st.State.Watch(ctx, fleet.StateDeploymentFilter(d), jetstream.IgnoreDeletes())
	if err != nil {
		return 0, 0, err
	}
	for e := range w.Updates() {
		if e == nil {
			break
		}
		if s, err := fleet.DecodeState(e.Value()); err == nil {
			counts[s.Phase]++
		}
	}
	_ = w.Stop()
	sel := labels.SelectorFromSet(labels.Set{"fleet": "bench"})
	matched := 0
	if err := st.EachDevice(ctx, func(di *fleet.DeviceInfo) {
		if sel.Matches(labels.Set(di.Labels)) {
			matched++
		}
	}); err != nil {
		return 0, 0, err
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if counts[fleet.PhaseRunning] != n || matched != n {
		return took, 0, fmt.Errorf("the recount found %d running of %d matched, want %d", counts[fleet.PhaseRunning], matched, n)
	}
	return took, float64(after.TotalAlloc - before.TotalAlloc), nil
}

// deploymentFeed follows the bench Deployment's status through a watch and tells when a condition on
// it first holds.
type deploymentFeed struct {
	mu      sync.Mutex
	w       watch.Interface
	last    *iotv1.Deployment
	waiters []feedWaiter
	seen    int
}

type feedWaiter struct {
	cond func(a iotv1.Aggregate, gen, observed int64) bool
	ch   chan time.Time
}

func watchDeployment(ctx context.Context, kc client.WithWatch) (*deploymentFeed, error) {
	w, err := kc.Watch(ctx, &iotv1.DeploymentList{}, client.InNamespace(benchNamespace))
	if err != nil {
		return nil, err
	}
	f := &deploymentFeed{w: w}
	go func() {
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*iotv1.Deployment)
			if !ok {
				continue
			}
			now := time.Now()
			f.mu.Lock()
			f.last = d
			f.seen++
			kept := f.waiters[:0]
			for _, wt := range f.waiters {
				if wt.cond(d.Status.Aggregate, d.Generation, d.Status.ObservedGeneration) {
					wt.ch <- now
					continue
				}
				kept = append(kept, wt)
			}
			f.waiters = kept
			f.mu.Unlock()
		}
	}()
	return f, nil
}

// when returns a channel that receives the time of the first status (from now on, or the current one)
// for which cond holds.
func (f *deploymentFeed) when(cond func(a iotv1.Aggregate, gen, observed int64) bool) <-chan time.Time {
	ch := make(chan time.Time, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiters = append(f.waiters, feedWaiter{cond: cond, ch: ch})
	return ch
}

// updates is how many events of the Deployment the watch delivered.
func (f *deploymentFeed) updates() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

func (f *deploymentFeed) stop() { f.w.Stop() }

// simulator plays the fleet's agents: it registers the devices, follows the desired-state bucket, and
// reports each device's transitions (Pending, then Running) with compare-and-swap, as the agent does.
// Each device belongs to one worker, which alone writes its records (and keeps its last record, as the
// device itself would); the workers share a few connections.
type simulator struct {
	conns   []*nats.Conn
	stores  []*store.Store
	st      *store.Store
	devices []string
	workers []chan simJob
	wg      sync.WaitGroup

	mu     sync.Mutex
	err    error
	writes int64
}

type simJob struct {
	device string
	gen    int64 // 0: the device's current generation
	phase  fleet.Phase
	msg    string
	done   *sync.WaitGroup
}

func newSimulator(ctx context.Context, srv fleetNATS, o fleetOptions) (*simulator, error) {
	s := &simulator{}
	for range max(o.Connections, 1) {
		nc, st, err := srv.connectOperator(ctx, fleetHeartbeatTTL)
		if err != nil {
			s.close()
			return nil, err
		}
		s.conns, s.stores = append(s.conns, nc), append(s.stores, st)
	}
	s.st = s.stores[0]
	for i := range max(o.Workers, 1) {
		ch := make(chan simJob, 256)
		s.workers = append(s.workers, ch)
		s.wg.Add(1)
		go s.work(ctx, s.stores[i%len(s.stores)], ch)
	}
	return s, nil
}

func (s *simulator) close() {
	for _, ch := range s.workers {
		close(ch)
	}
	s.wg.Wait()
	for _, nc := range s.conns {
		nc.Close()
	}
}

func (s *simulator) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *simulator) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *simulator) written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func (s *simulator) worker(device string) chan simJob {
	h := fnv.New32a()
	_, _ = h.Write([]byte(device))
	return s.workers[int(h.Sum32())%len(s.workers)]
}

// register writes n devices' records (labelled fleet=bench) and one heartbeat each, through the workers.
func (s *simulator) register(ctx context.Context, n int) error {
	var wg sync.WaitGroup
	s.devices = make([]string, n)
	for i := range n {
		s.devices[i] = fmt.Sprintf("dev-%06d", i)
		wg.Add(1)
		select {
		case s.worker(s.devices[i]) <- simJob{device: s.devices[i], done: &wg}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	wg.Wait()
	return s.failed()
}

// move writes phase for every device in batch (their current generation) and returns how long that took
// and when the last write was acknowledged.
func (s *simulator) move(ctx context.Context, batch []string, phase fleet.Phase, msg string) (time.Duration, time.Time, error) {
	var wg sync.WaitGroup
	start := time.Now()
	for _, d := range batch {
		wg.Add(1)
		select {
		case s.worker(d) <- simJob{device: d, phase: phase, msg: msg, done: &wg}:
		case <-ctx.Done():
			return 0, time.Time{}, ctx.Err()
		}
	}
	wg.Wait()
	end := time.Now()
	return end.Sub(start), end, s.failed()
}

// follow hands each desired state the operator publishes to its device's worker: Pending, then Running.
func (s *simulator) follow(ctx context.Context) {
	w, err := s.st.Desired.WatchAll(ctx)
	if err != nil {
		s.fail(err)
		return
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			device, _, err := fleet.ParseDesiredKey(e.Key())
			des, derr := fleet.DecodeDesired(e.Value())
			if err != nil || derr != nil {
				s.fail(errors.Join(err, derr))
				return
			}
			for _, ph := range []fleet.Phase{fleet.PhasePending, fleet.PhaseRunning} {
				select {
				case s.worker(device) <- simJob{device: device, gen: des.Generation, phase: ph}:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// simDevice is what a worker knows of one of its devices: its last state record and that record's
// revision (what the device's agent knows of itself).
type simDevice struct {
	state *fleet.State
	rev   uint64
}

func (s *simulator) work(ctx context.Context, st *store.Store, jobs <-chan simJob) {
	defer s.wg.Done()
	devices := map[string]*simDevice{}
	key := fleet.DeploymentKey{Namespace: benchNamespace, Name: "fleet"}
	for j := range jobs {
		err := func() error {
			if j.phase == fleet.PhaseNone { // registration
				info := fleet.DeviceInfo{Version: fleet.ContractVersion, ID: j.device, Labels: map[string]string{"fleet": "bench"},
					Inventory: fleet.Inventory{Hostname: j.device, Arch: "arm64", OS: "linux", AgentVersion: "bench"}}
				if _, err := st.Devices.Create(ctx, fleet.DeviceKey(j.device), fleet.Encode(info)); err != nil {
					return err
				}
				_, err := st.Heartbeat(ctx, j.device, 0)
				return err
			}
			dev := devices[j.device]
			if dev == nil {
				dev = &simDevice{}
				devices[j.device] = dev
			}
			gen := j.gen
			if gen == 0 && dev.state != nil {
				gen = dev.state.Generation
			}
			next := fleet.Next(dev.state, gen, j.phase, j.msg, time.Now())
			if next == nil {
				return nil
			}
			var (
				rev uint64
				err error
			)
			if dev.rev == 0 {
				rev, err = st.State.Create(ctx, fleet.StateKey(key, j.device), fleet.Encode(next))
			} else {
				rev, err = st.State.Update(ctx, fleet.StateKey(key, j.device), fleet.Encode(next), dev.rev)
			}
			if err != nil {
				return err
			}
			dev.state, dev.rev = next, rev
			s.mu.Lock()
			s.writes++
			s.mu.Unlock()
			return nil
		}()
		if err != nil && ctx.Err() == nil {
			s.fail(fmt.Errorf("device %s: %w", j.device, err))
		}
		if j.done != nil {
			j.done.Done()
		}
	}
}

// renderFleet is the fleet workload's section of the report.
func renderFleet(w func(format string, args ...any), r *fleetResults) {
	if r == nil || len(r.Points) == 0 {
		return
	}
	o := r.Opts
	w("\n### IoT fleet (`-workloads=%s`)\n\n", fleetName)
	w("%s\n", para(fmt.Sprintf("One iot `Deployment` (Immediate rollout) selects N simulated devices. The devices are a "+
		"simulator in the bench process playing each device's agent with the fake runtime: it registers the devices "+
		"(a device record and one heartbeat each; the heartbeat TTL, %s, outlasts the run), then follows the desired-state "+
		"bucket and reports Pending, then Running, with compare-and-swap, as the agent does; %d workers on %d NATS "+
		"connections write for all devices, with the operator's credentials. NATS is either an in-process server with JetStream on "+
		"127.0.0.1 enforcing the fleet's permissions as shipped (fleet-auth's configuration), or (*3-server cluster, R3*) three "+
		"nats-server processes (bin/nats-server, the pinned module) started from the configuration the operator generates for "+
		"its StatefulSet, with every bucket on all three servers; the operator, given every server's URL and `--iot-fleet-replicas=3`, opens the "+
		"buckets with three replicas, and the bench waits until every replica is current before the Deployment is "+
		"created. Messages on the cluster are summed over the three servers, so they include the replication between them. "+
		"The operator is the real binary, "+
		"on a control plane of its own per size, with `--nats-url` pointing at it and the operator's credentials, so its "+
		"figures include the server's permission checks. *Converge* is from the "+
		"Deployment's create to a status with `aggregate.succeeded` = N, seen by a watch. Then a batch of %d devices fails "+
		"at once, then recovers: *reflected* is from the batch's last acknowledged write to the first status that shows all "+
		"of it. Each batch comes after %s without changes (the operator writes a Deployment's status at most once a second: "+
		"a batch right after a write waits for the rest of that second).", fleetHeartbeatTTL, o.Workers, o.Connections, o.Batch, batchQuiet)))
	w("Flags: `%s`.\n\n", fleetFlagsSummary(o))
	w("| devices | NATS | registered in | **converge** | batch failing: written | **reflected** | batch recovering: written | **reflected** | status updates |\n")
	w("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Points {
		w("| %d | %s | %s | **%s** | %s | **%s** | %s | **%s** | %d |\n", p.N, natsName(p.Servers), ms(p.Register), ms(p.Converge), ms(p.FailWritten),
			ms(p.FailReflected), ms(p.RecoverWritten), ms(p.RecoverReflect), p.StatusWrites)
	}
	w("\n%s\n", para("NATS messages per device state transition during convergence, everything the server carried "+
		"included (the operator's desired-state writes and their acknowledgements, the simulator's state writes and theirs, "+
		"the watches' deliveries to the operator and the simulator, flow control):"))
	w("| devices | NATS | transitions | messages in / transition | messages out / transition |\n|---:|---|---:|---:|---:|\n")
	for _, p := range r.Points {
		w("| %d | %s | %d | %s | %s |\n", p.N, natsName(p.Servers), p.Transitions, per(p.MsgsIn, p.Transitions), per(p.MsgsOut, p.Transitions))
	}
	w("\n%s\n", para(fmt.Sprintf("The operator's memory after convergence and the batches (live heap and heap in use after a forced "+
		"collection through pprof, and RSS; the reading with the least live heap of %d taken 2 s apart, since a reading can catch NATS "+
		"messages received and not yet consumed), against what the reference's way costs: a recount of every device per tick "+
		"(here one such recount by the bench against the same server: every device's state record and device record read "+
		"and decoded), which the operator never does once its counters are initialised.", memReadings)))
	w("| devices | NATS | **live heap** | heap in use | RSS | naive recount: one tick | allocated per tick | messages per tick |\n")
	w("|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Points {
		w("| %d | %s | **%s** | %s | %s | %s | %s | %.0f |\n", p.N, natsName(p.Servers), mib(p.Mem.HeapAlloc), mib(p.Mem.HeapInuse), mib(p.Mem.RSS),
			ms(p.NaiveTick), mib(p.NaiveAlloc), p.NaiveMsgs)
	}
	if len(r.Points) >= 2 && r.Points[0].Servers == r.Points[len(r.Points)-1].Servers {
		a, b := r.Points[0], r.Points[len(r.Points)-1]
		w("\n%s", para(fmt.Sprintf("From %d to %d devices the operator's live heap moved by %s (%.2f bytes per added device).",
			a.N, b.N, mib(b.Mem.HeapAlloc-a.Mem.HeapAlloc), (b.Mem.HeapAlloc-a.Mem.HeapAlloc)/float64(b.N-a.N))))
	}
}

// fleetFlagsSummary is the fleet's flags, for the report's heading.
func fleetFlagsSummary(o fleetOptions) string {
	s := make([]string, len(o.Sizes))
	for i, n := range o.Sizes {
		s[i] = fmt.Sprint(n)
	}
	k := make([]string, len(o.Servers))
	for i, n := range o.Servers {
		k[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("-fleet-sizes=%s -fleet-servers=%s -fleet-batch=%d", strings.Join(s, ","), strings.Join(k, ","), o.Batch)
}

// fleetMain runs the fleet when -workloads asked for it, after the other workloads; the figures are
// rendered with theirs.
func fleetMain(ctx context.Context, c *config, rep *report) error {
	sizes, err := parseInts(fleetSizes)
	if err != nil {
		return fmt.Errorf("-fleet-sizes: %w", err)
	}
	if len(sizes) == 0 || slices.Contains(sizes, 0) {
		return errors.New("-fleet-sizes: at least one size, none 0")
	}
	servers, err := parseInts(fleetServers)
	if err != nil {
		return fmt.Errorf("-fleet-servers: %w", err)
	}
	for _, k := range servers {
		if k != 1 && k != 3 {
			return fmt.Errorf("-fleet-servers: %d: 1 or 3", k)
		}
	}
	o := fleetOpts
	o.Sizes, o.Servers = sizes, servers
	fleetReport, err = runFleet(ctx, c, o)
	rep.Finished = time.Now()
	return err
}

// natsName names a point's NATS in the report.
func natsName(servers int) string {
	if servers == 3 {
		return "3-server cluster, R3"
	}
	return "1 server"
}
