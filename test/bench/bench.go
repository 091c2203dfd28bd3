package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/ergo"
	"github.com/platform-operator/platform-operator/internal/localcluster"
	"github.com/platform-operator/platform-operator/internal/promtext"
	"github.com/platform-operator/platform-operator/internal/scheme"
)

// config is one bench run.
type config struct {
	RepoRoot string
	Operator string   // the operator binary
	Args     []string // extra operator flags for every run but the sweep's
	LogDir   string

	Sizes         []int         // convergence: networks created at once, one fresh control plane per run
	Clients       int           // concurrent requests of the tight client (creates, floor)
	Timeout       time.Duration // longest wait for any one convergence
	SteadyWindow  time.Duration // how long the steady state is watched after convergence
	ChurnRate     float64       // spec edits per second
	ChurnDuration time.Duration
	MemorySizes   []int // networks at which memory is measured, ascending, first usually 0
	Unrelated     int   // ConfigMaps, Secrets and Deployments each, in other namespaces
	Sweep         []sweepCase
	SweepSize     int

	Progress io.Writer
}

// sweepCase is one operator configuration the tuning sweep compares.
type sweepCase struct {
	Name string
	Args []string
}

// results is everything one run measured.
type results struct {
	Started, Finished time.Time
	Convergence       []convergence
	Steady            steady
	Churn             churnResult
	Memory            []memPoint
	Sweep             []sweepResult
}

type convergence struct {
	N                   int
	Floor, Operator     time.Duration
	CreatesDone         time.Duration // when the bench had created every ErgoNetwork, in the operator's run
	Requests            requests      // what the operator sent until convergence
	Reconciles          float64
	ServerWrites        map[string]float64 // API server's write requests by verb and resource, the bench's own creates taken out
	FloorWritesExpected int
	// CPU seconds spent until convergence by process: kube-apiserver, etcd and (its run) the operator.
	CPU, FloorCPU map[string]float64
}

type steady struct {
	N                              int
	Window                         time.Duration
	WindowWrites, WindowReconciles float64
	RestartReady                   time.Duration // process start to /readyz
	Resync                         time.Duration // process start to the last reconcile of the resync
	ResyncReconciles               float64
	ResyncRequests                 requests
	ReconcileMean                  time.Duration
}

type churnResult struct {
	N, Sent, Applied, Pending int
	Rate                      float64
	Duration                  time.Duration
	ConfigP50, ConfigP99      time.Duration
	RolloutP50, RolloutP99    time.Duration
	RolloutMax                time.Duration
	Requests                  requests
	Reconciles                float64
}

type memPoint struct {
	Label     string
	Networks  int
	Unrelated int
	Mem       memory
	Converged time.Duration // how long the networks added for this point took to converge (0 for none)
}

type sweepResult struct {
	Case     sweepCase
	N        int
	Operator time.Duration
	Requests requests
}

func (c *config) logf(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// env is one fresh control plane and the bench's clients of it.
type env struct {
	cluster *localcluster.Cluster
	cfg     *rest.Config
	client  client.Client
	cs      *kubernetes.Clientset
}

const benchNamespace = "bench"

func (c *config) startEnv(ctx context.Context, name string) (*env, error) {
	cl := localcluster.New(localcluster.Options{
		RepoRoot: c.RepoRoot,
		LogDir:   filepath.Join(c.LogDir, name),
	})
	if err := cl.Start(ctx); err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	cfg := cl.Config()
	// The tight client: no client-side rate limit; the API server's own limits are the floor.
	cfg.QPS, cfg.Burst = -1, 0
	cfg.UserAgent = "platform-operator-bench"
	cli, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err == nil {
		var cs *kubernetes.Clientset
		if cs, err = kubernetes.NewForConfig(cfg); err == nil {
			e := &env{cluster: cl, cfg: cfg, client: cli, cs: cs}
			if err = e.warmUp(ctx); err == nil {
				return e, nil
			}
		}
	}
	return nil, errors.Join(err, cl.Stop())
}

func (e *env) stop() error { return e.cluster.Stop() }

// warmUp creates the bench namespace and has the client discover every kind it writes, so no run's clock
// includes the client's first discovery (the operator does its own before /readyz).
func (e *env) warmUp(ctx context.Context) error {
	if err := createNamespace(ctx, e.client, benchNamespace); err != nil {
		return err
	}
	net := network(benchNamespace, 0)
	objs := []client.Object{net, ergo.PVC(net), ergo.Certificate(net), ergo.ConfigMap(net, nil),
		ergo.Deployment(net, ergo.Options{}, ""), ergo.Service(net), ergo.Route(net), operSecret(benchNamespace, 0)}
	for _, o := range objs {
		gvk, err := e.client.GroupVersionKindFor(o)
		if err != nil {
			return err
		}
		if _, err := e.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return err
		}
	}
	return nil
}

// serverSnapshot is what the control plane's own metrics say at one moment.
type serverSnapshot struct {
	// cpu is the CPU seconds kube-apiserver and etcd have used so far (process_cpu_seconds_total).
	cpu map[string]float64
	// writes is apiserver_request_total for write verbs, by "VERB resource[/sub]".
	writes map[string]float64
}

// snapshot scrapes kube-apiserver's and etcd's /metrics once each.
func (e *env) snapshot(ctx context.Context) (serverSnapshot, error) {
	raw, err := e.cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return serverSnapshot{}, err
	}
	api, err := promtext.Parse(string(raw))
	if err != nil {
		return serverSnapshot{}, err
	}
	text, err := httpGet(ctx, e.cluster.EtcdURL().String()+"/metrics")
	if err != nil {
		return serverSnapshot{}, err
	}
	etcd, err := promtext.Parse(text)
	if err != nil {
		return serverSnapshot{}, err
	}
	snap := serverSnapshot{
		cpu: map[string]float64{
			"kube-apiserver": api.Sum("process_cpu_seconds_total"),
			"etcd":           etcd.Sum("process_cpu_seconds_total"),
		},
		writes: map[string]float64{},
	}
	for series, v := range api {
		tail, ok := strings.CutPrefix(series, "apiserver_request_total{")
		if !ok {
			continue
		}
		l := labelsOf(tail)
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE":
		default:
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		snap.writes[key] += v
	}
	return snap, nil
}

// labelsOf parses `a="x",b="y"}` (no escaped quotes in the labels read here).
func labelsOf(s string) map[string]string {
	out := map[string]string{}
	s = strings.TrimSuffix(s, "}")
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// run is the whole bench.
func run(ctx context.Context, c *config) (*results, error) {
	res := &results{Started: time.Now()}
	largest := slices.Max(c.Sizes)
	for _, n := range c.Sizes {
		conv := convergence{N: n, FloorWritesExpected: n * (1 + childrenPerNetwork + 1)}
		var err error
		if conv.Floor, conv.FloorCPU, err = c.floorRun(ctx, n); err != nil {
			return res, fmt.Errorf("floor, N=%d: %w", n, err)
		}
		c.logf("floor N=%d: %s", n, conv.Floor.Round(time.Millisecond))
		var after func(context.Context, *env, *operator) error
		if n == largest {
			after = func(ctx context.Context, e *env, op *operator) error { return c.steadyAndChurn(ctx, e, op, n, res) }
		}
		if err := c.operatorRun(ctx, n, c.Args, &conv, after); err != nil {
			return res, fmt.Errorf("operator, N=%d: %w", n, err)
		}
		c.logf("operator N=%d: %s (%.1fx floor), %.2f writes/network", n, conv.Operator.Round(time.Millisecond),
			conv.Operator.Seconds()/conv.Floor.Seconds(), conv.Requests.Writes/float64(n))
		res.Convergence = append(res.Convergence, conv)
	}
	for _, sc := range c.Sweep {
		conv := convergence{N: c.SweepSize}
		if err := c.operatorRun(ctx, c.SweepSize, append(slices.Clone(c.Args), sc.Args...), &conv, nil); err != nil {
			return res, fmt.Errorf("sweep %s: %w", sc.Name, err)
		}
		c.logf("sweep %s N=%d: %s", sc.Name, c.SweepSize, conv.Operator.Round(time.Millisecond))
		res.Sweep = append(res.Sweep, sweepResult{Case: sc, N: c.SweepSize, Operator: conv.Operator, Requests: conv.Requests})
	}
	var err error
	if res.Memory, err = c.memoryRun(ctx); err != nil {
		return res, fmt.Errorf("memory: %w", err)
	}
	res.Finished = time.Now()
	return res, nil
}

// floorRun times the tight client alone on a fresh control plane, and the CPU the control plane spent.
func (c *config) floorRun(ctx context.Context, n int) (time.Duration, map[string]float64, error) {
	e, err := c.startEnv(ctx, fmt.Sprintf("floor-%d", n))
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = e.stop() }()
	if err := createSecrets(ctx, e.client, benchNamespace, 0, n, c.Clients); err != nil {
		return 0, nil, err
	}
	t, err := newTracker(ctx, e.cfg, benchNamespace)
	if err != nil {
		return 0, nil, err
	}
	defer t.stop()
	snap0, err := e.snapshot(ctx)
	if err != nil {
		return 0, nil, err
	}
	reached := t.expect(n)
	start := time.Now()
	if err := floor(ctx, e.client, benchNamespace, n, c.Clients); err != nil {
		return 0, nil, err
	}
	if err := c.wait(ctx, reached, t, n, nil); err != nil {
		return 0, nil, err
	}
	took := t.lastConverged().Sub(start)
	snap1, err := e.snapshot(ctx)
	return took, diff(snap1.cpu, snap0.cpu), err
}

// operatorRun times the operator converging n networks the bench creates at once, on a fresh control
// plane; after, when set, runs on the converged cluster before it is torn down.
func (c *config) operatorRun(ctx context.Context, n int, args []string, conv *convergence, after func(context.Context, *env, *operator) error) error {
	e, err := c.startEnv(ctx, fmt.Sprintf("operator-%d", n))
	if err != nil {
		return err
	}
	defer func() { _ = e.stop() }()
	if err := createSecrets(ctx, e.client, benchNamespace, 0, n, c.Clients); err != nil {
		return err
	}
	op, err := startOperator(ctx, c.Operator, e.cluster.KubeconfigPath(), c.LogDir, fmt.Sprintf("%d", n), args)
	if err != nil {
		return err
	}
	defer func() { _ = op.stop() }()
	t, err := newTracker(ctx, e.cfg, benchNamespace)
	if err != nil {
		return err
	}
	defer t.stop()
	// The operator has listed its (empty) world once /readyz answers and its informers synced; give
	// them a moment so the baseline holds their start-up requests.
	if _, _, err := op.waitIdle(ctx, metrics{}, 0, time.Second, time.Minute); err != nil {
		return err
	}
	base, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	serverBase, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	reached := t.expect(n)
	start := time.Now()
	if err := createNetworks(ctx, e.client, benchNamespace, 0, n, c.Clients); err != nil {
		return err
	}
	conv.CreatesDone = time.Since(start)
	if err := c.wait(ctx, reached, t, n, op); err != nil {
		return err
	}
	conv.Operator = t.lastConverged().Sub(start)
	atConvergedServer, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	conv.CPU = diff(atConvergedServer.cpu, serverBase.cpu)
	atConverged, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	conv.CPU["operator"] = atConverged.Sum("process_cpu_seconds_total") - base.Sum("process_cpu_seconds_total")
	// Writes the operator makes after the last network converged (a late event, say) count too.
	m, _, err := op.waitIdle(ctx, base, float64(n), 2*time.Second, c.Timeout)
	if err != nil {
		return err
	}
	conv.Requests = m.requests().minus(base.requests())
	conv.Reconciles = m.reconciles() - base.reconciles()
	serverAfter, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	conv.ServerWrites = diff(serverAfter.writes, serverBase.writes)
	conv.ServerWrites["POST ergonetworks"] -= float64(n) // the bench's own creates
	if conv.ServerWrites["POST ergonetworks"] <= 0 {
		delete(conv.ServerWrites, "POST ergonetworks")
	}
	if after != nil {
		return after(ctx, e, op)
	}
	return nil
}

// wait waits for reached, reporting progress, and fails after c.Timeout or when the operator exits.
func (c *config) wait(ctx context.Context, reached <-chan struct{}, t *tracker, n int, op *operator) error {
	var exited <-chan struct{}
	if op != nil {
		exited = op.child.Done()
	}
	timeout := time.After(c.Timeout)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-reached:
			return nil
		case <-exited:
			return fmt.Errorf("operator exited: %v (log: %s)", op.child.Err(), op.logPath)
		case <-timeout:
			return fmt.Errorf("only %d of %d networks converged after %s", t.convergedCount(), n, c.Timeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			c.logf("  %d/%d converged", t.convergedCount(), n)
		}
	}
}

// steadyAndChurn measures, on a converged cluster of n networks, the quiet after convergence, a restart's
// resync, and the latency of spec edits under churn.
func (c *config) steadyAndChurn(ctx context.Context, e *env, op *operator, n int, res *results) error {
	st := steady{N: n, Window: c.SteadyWindow}
	s0, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	select {
	case <-time.After(c.SteadyWindow):
	case <-ctx.Done():
		return ctx.Err()
	}
	s1, err := op.scrape(ctx)
	if err != nil {
		return err
	}
	st.WindowWrites = s1.requests().minus(s0.requests()).Writes
	st.WindowReconciles = s1.reconciles() - s0.reconciles()

	if err := op.stop(); err != nil {
		return err
	}
	op2, err := startOperator(ctx, c.Operator, e.cluster.KubeconfigPath(), c.LogDir, fmt.Sprintf("%d-restart", n), c.Args)
	if err != nil {
		return err
	}
	defer func() { _ = op2.stop() }()
	st.RestartReady = op2.readyAfter
	m, last, err := op2.waitIdle(ctx, metrics{}, float64(n), 3*time.Second, c.Timeout)
	if err != nil {
		return err
	}
	st.Resync = last.Sub(op2.startedAt)
	st.ResyncReconciles = m.reconciles()
	st.ResyncRequests = m.requests()
	if cnt := m.Sum("controller_runtime_reconcile_time_seconds_count", `controller="ergonetwork"`); cnt > 0 {
		st.ReconcileMean = time.Duration(m.Sum("controller_runtime_reconcile_time_seconds_sum", `controller="ergonetwork"`) / cnt * float64(time.Second))
	}
	res.Steady = st
	c.logf("steady N=%d: %.0f writes in %s; restart resync %s, %.0f writes", n, st.WindowWrites, c.SteadyWindow, st.Resync.Round(time.Millisecond), st.ResyncRequests.Writes)

	t, err := newTracker(ctx, e.cfg, benchNamespace)
	if err != nil {
		return err
	}
	defer t.stop()
	ch := churnResult{N: n, Rate: c.ChurnRate, Duration: c.ChurnDuration}
	b0, err := op2.scrape(ctx)
	if err != nil {
		return err
	}
	if ch.Sent, err = churn(ctx, e.client, t, benchNamespace, n, c.ChurnRate, c.ChurnDuration); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, pending := t.latencies()
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b1, _, err := op2.waitIdle(ctx, b0, 0, time.Second, c.Timeout)
	if err != nil {
		return err
	}
	cfgLat, roll, pending := t.latencies()
	ch.Applied, ch.Pending = len(roll), pending
	ch.ConfigP50, ch.ConfigP99 = percentile(cfgLat, 50), percentile(cfgLat, 99)
	ch.RolloutP50, ch.RolloutP99, ch.RolloutMax = percentile(roll, 50), percentile(roll, 99), percentile(roll, 100)
	ch.Requests = b1.requests().minus(b0.requests())
	ch.Reconciles = b1.reconciles() - b0.reconciles()
	res.Churn = ch
	c.logf("churn: %d edits, p50 %s p99 %s", ch.Sent, ch.RolloutP50, ch.RolloutP99)
	return nil
}

// memoryRun grows one cluster through c.MemorySizes and then adds unrelated objects, measuring the
// operator after each step, and once more after a restart.
func (c *config) memoryRun(ctx context.Context) ([]memPoint, error) {
	e, err := c.startEnv(ctx, "memory")
	if err != nil {
		return nil, err
	}
	defer func() { _ = e.stop() }()
	op, err := startOperator(ctx, c.Operator, e.cluster.KubeconfigPath(), c.LogDir, "memory", c.Args)
	if err != nil {
		return nil, err
	}
	defer func() { _ = op.stop() }()
	t, err := newTracker(ctx, e.cfg, benchNamespace)
	if err != nil {
		return nil, err
	}
	defer t.stop()

	var points []memPoint
	measure := func(o *operator, label string, n, unrelated int, took time.Duration) error {
		if _, _, err := o.waitIdle(ctx, metrics{}, 0, 2*time.Second, c.Timeout); err != nil {
			return err
		}
		mem, err := o.memory(ctx)
		if err != nil {
			return err
		}
		// For `go tool pprof -top bin/platform-operator <file>` when a figure needs explaining.
		if err := o.saveHeapProfile(ctx, filepath.Join(c.LogDir, fmt.Sprintf("heap-%d-%d.pb.gz", n, unrelated))); err != nil {
			return err
		}
		points = append(points, memPoint{Label: label, Networks: n, Unrelated: unrelated, Mem: mem, Converged: took})
		c.logf("memory %s: heap %.1f MiB, RSS %.1f MiB", label, mem.HeapInuse/(1<<20), mem.RSS/(1<<20))
		return nil
	}
	have := 0
	for _, n := range c.MemorySizes {
		var took time.Duration
		if n > have {
			if err := createSecrets(ctx, e.client, benchNamespace, have, n, c.Clients); err != nil {
				return points, err
			}
			reached := t.expect(n)
			start := time.Now()
			if err := createNetworks(ctx, e.client, benchNamespace, have, n, c.Clients); err != nil {
				return points, err
			}
			if err := c.wait(ctx, reached, t, n, op); err != nil {
				return points, err
			}
			took = t.lastConverged().Sub(start)
			have = n
		}
		if err := measure(op, fmt.Sprintf("%d networks", n), n, 0, took); err != nil {
			return points, err
		}
	}
	if c.Unrelated > 0 {
		if err := unrelated(ctx, e.client, c.Unrelated, 50, c.Clients); err != nil {
			return points, err
		}
		if err := measure(op, fmt.Sprintf("%d networks + unrelated", have), have, c.Unrelated, 0); err != nil {
			return points, err
		}
	}
	if err := op.stop(); err != nil {
		return points, err
	}
	op2, err := startOperator(ctx, c.Operator, e.cluster.KubeconfigPath(), c.LogDir, "memory-restart", c.Args)
	if err != nil {
		return points, err
	}
	defer func() { _ = op2.stop() }()
	if _, _, err := op2.waitIdle(ctx, metrics{}, float64(have), 2*time.Second, c.Timeout); err != nil {
		return points, err
	}
	label := fmt.Sprintf("%d networks, after restart", have)
	if c.Unrelated > 0 {
		label = fmt.Sprintf("%d networks + unrelated, after restart", have)
	}
	return points, measure(op2, label, have, c.Unrelated, 0)
}

// writeFile writes data to path through a temporary file, so a failed run leaves the old file whole.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// httpClient serves every plain-HTTP GET of the bench: the operator's metrics and pprof, etcd's metrics,
// all on 127.0.0.1. A forced GC on a large heap can take a while, hence the generous timeout.
var httpClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil}}

// httpGet GETs url and wants 200.
func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}
