package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// config is one bench run.
type config struct {
	RepoRoot  string
	Operator  string   // the operator binary
	Args      []string // extra operator flags for every run but the sweep's
	LogDir    string
	Workloads []Workload

	Sizes         []int         // convergence: objects created at once, one fresh control plane per run
	Clients       int           // concurrent requests of the tight client (creates, floor)
	Timeout       time.Duration // longest wait for any one convergence
	SteadyWindow  time.Duration // how long the steady state is watched after convergence
	ChurnRate     float64       // spec edits per second
	ChurnDuration time.Duration
	MemorySizes   []int // objects at which memory is measured, ascending, first usually 0
	Unrelated     int   // ConfigMaps, Secrets and Deployments each, in other namespaces
	Sweep         []sweepCase
	SweepSize     int
	// CPUProfile is how long the operator's CPU is profiled from the first create of each convergence run
	// (the restart's resync: at most 5 s); 0 for no profile. A profile under way holds the operator's
	// shutdown until it ends: the tiny run of make test profiles for 1 s.
	CPUProfile time.Duration

	Progress io.Writer
}

// sweepCase is one operator configuration the tuning sweep compares.
type sweepCase struct {
	Name string
	Args []string
}

// report is everything one run measured, workload by workload.
type report struct {
	Started, Finished time.Time
	Workloads         []*results
}

// results is everything one run measured of one workload.
type results struct {
	Workload    Workload
	Convergence []convergence
	Steady      steady
	Churn       churnResult
	Memory      []memPoint
	Sweep       []sweepResult
	Extra       extra // the workload's own measurement (measurer), nil for none
}

type convergence struct {
	N               int
	Floor, Operator time.Duration
	CreatesDone     time.Duration // when the bench had created every object, in the operator's run
	Requests        requests      // what the operator sent until convergence
	Reconciles      float64
	ServerWrites    map[string]float64 // API server's write requests by verb and resource, the bench's own creates taken out
	Counters        map[string]float64 // the workload's own counters (counter), first create to idle
	// CPU seconds spent until convergence by process: kube-apiserver, etcd and (its run) the operator.
	CPU, FloorCPU map[string]float64
}

type steady struct {
	N                              int
	Window                         time.Duration
	WindowWrites, WindowReconciles float64
	RestartReady                   time.Duration // process start to /readyz
	Resync                         time.Duration // process start to the last reconcile of the resync
	WorkersAfter                   time.Duration // process start to the controllers' workers started (caches synced)
	ResyncWork                     time.Duration // workers started to the last reconcile of the resync
	ResyncReconciles               float64
	ResyncRequests                 requests
	ReconcileMean                  time.Duration
	ResyncCounters                 map[string]float64 // the workload's own counters (counter) over the resync
}

type churnResult struct {
	N, Sent, Applied, Pending int
	Rate                      float64
	Duration                  time.Duration
	WrittenP50, WrittenP99    time.Duration
	AppliedP50, AppliedP99    time.Duration
	AppliedMax                time.Duration
	Requests                  requests
	Reconciles                float64
}

type memPoint struct {
	Label     string
	Objects   int
	Unrelated int
	Mem       memory
	Converged time.Duration // how long the objects added for this point took to converge (0 for none)
	Trimmed   bool          // the operator had given back its start's pages (memtrim) when this was read
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

// run is the whole bench: every workload in turn.
func run(ctx context.Context, c *config) (*report, error) {
	rep := &report{Started: time.Now()}
	for _, w := range c.Workloads {
		res, err := c.runWorkload(ctx, w)
		if res != nil {
			rep.Workloads = append(rep.Workloads, res)
		}
		if err != nil {
			return rep, fmt.Errorf("%s: %w", w.Info().Name, err)
		}
	}
	rep.Finished = time.Now()
	return rep, nil
}

// workloadRun measures one workload; its logs go to a directory of their own.
type workloadRun struct {
	*config
	w      Workload
	info   Info
	logDir string
}

// runWorkload measures one workload: convergence against the floor at every size (steady state, restart
// and churn at the largest), the sweep, then memory.
func (c *config) runWorkload(ctx context.Context, w Workload) (*results, error) {
	info := w.Info()
	r := &workloadRun{config: c, w: w, info: info, logDir: filepath.Join(c.LogDir, info.Name)}
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return nil, err
	}
	if cl, ok := w.(closer); ok {
		defer func() {
			if err := cl.Close(); err != nil {
				c.logf("%s: close: %v", info.Name, err)
			}
		}()
	}
	res := &results{Workload: w}
	sizes := info.sizes(c.Sizes)
	largest := slices.Max(sizes)
	for _, n := range sizes {
		conv := convergence{N: n}
		var err error
		if conv.Floor, conv.FloorCPU, err = r.floorRun(ctx, n); err != nil {
			return res, fmt.Errorf("floor, N=%d: %w", n, err)
		}
		r.logf("%s floor N=%d: %s", info.Name, n, conv.Floor.Round(time.Millisecond))
		var after func(context.Context, *env, *operator) error
		if n == largest {
			after = func(ctx context.Context, e *env, op *operator) error { return r.steadyAndChurn(ctx, e, op, n, res) }
		}
		if err := r.operatorRun(ctx, n, c.Args, &conv, after); err != nil {
			return res, fmt.Errorf("operator, N=%d: %w", n, err)
		}
		r.logf("%s operator N=%d: %s (%.1fx floor), %.2f writes/%s", info.Name, n, conv.Operator.Round(time.Millisecond),
			conv.Operator.Seconds()/conv.Floor.Seconds(), conv.Requests.Writes/float64(n), info.Noun)
		res.Convergence = append(res.Convergence, conv)
	}
	for _, sc := range c.Sweep {
		sweepSize := info.size(c.SweepSize)
		conv := convergence{N: sweepSize}
		if err := r.operatorRun(ctx, sweepSize, append(slices.Clone(c.Args), sc.Args...), &conv, nil); err != nil {
			return res, fmt.Errorf("sweep %s: %w", sc.Name, err)
		}
		r.logf("%s sweep %s N=%d: %s", info.Name, sc.Name, sweepSize, conv.Operator.Round(time.Millisecond))
		res.Sweep = append(res.Sweep, sweepResult{Case: sc, N: sweepSize, Operator: conv.Operator, Requests: conv.Requests})
	}
	var err error
	if m, ok := w.(measurer); ok {
		if res.Extra, err = m.Measure(ctx, r); err != nil {
			return res, err
		}
	}
	if res.Memory, err = r.memoryRun(ctx); err != nil {
		return res, fmt.Errorf("memory: %w", err)
	}
	return res, nil
}

// env is one fresh control plane and the bench's clients of it.
type env struct {
	cluster *localcluster.Cluster
	cfg     *rest.Config
	client  client.Client
	cs      *kubernetes.Clientset
}

const benchNamespace = "bench"

// profileAPIServer writes a CPU profile of the control plane's kube-apiserver over the next d to path,
// in the background (its /debug/pprof, which the bench's admin credentials may read): where the API
// server's time goes in a floor run against an operator run. The returned func ends the profile early
// (a run shorter than d); call it before stopping the control plane, which would otherwise wait for the
// request.
func (e *env) profileAPIServer(ctx context.Context, d time.Duration, path string) (stop func()) {
	ctx, stop = context.WithCancel(ctx)
	go func() {
		data, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + 30*time.Second).DoRaw(ctx)
		if err == nil {
			_ = os.WriteFile(path, data, 0o644)
		}
	}()
	return stop
}

func (r *workloadRun) startEnv(ctx context.Context, name string) (*env, error) {
	cl := localcluster.New(localcluster.Options{
		RepoRoot: r.RepoRoot,
		LogDir:   filepath.Join(r.logDir, name),
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
			if err = e.warmUp(ctx, r.w.Kinds()); err == nil {
				return e, nil
			}
		}
	}
	return nil, errors.Join(err, cl.Stop())
}

func (e *env) stop() error { return e.cluster.Stop() }

// warmUp creates the bench namespace and has the client discover every kind it writes, so no run's clock
// includes the client's first discovery (the operator does its own before /readyz).
func (e *env) warmUp(ctx context.Context, kinds []client.Object) error {
	if err := createNamespace(ctx, e.client, benchNamespace); err != nil {
		return err
	}
	for _, o := range kinds {
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
	api, err := localcluster.ParseMetrics(bytes.NewReader(raw))
	if err != nil {
		return serverSnapshot{}, fmt.Errorf("kube-apiserver metrics: %w", err)
	}
	text, err := httpGet(ctx, e.cluster.EtcdURL().String()+"/metrics")
	if err != nil {
		return serverSnapshot{}, err
	}
	etcd, err := localcluster.ParseMetrics(bytes.NewReader([]byte(text)))
	if err != nil {
		return serverSnapshot{}, fmt.Errorf("etcd metrics: %w", err)
	}
	return serverSnapshot{
		cpu: map[string]float64{
			"kube-apiserver": api.Sum("process_cpu_seconds_total", nil),
			"etcd":           etcd.Sum("process_cpu_seconds_total", nil),
		},
		writes: serverWrites(api),
	}, nil
}

// serverWrites is kube-apiserver's apiserver_request_total for the write verbs, by "VERB resource" or
// "VERB resource/subresource".
func serverWrites(api metrics) map[string]float64 {
	out := map[string]float64{}
	for _, s := range api["apiserver_request_total"].GetMetric() {
		verb := labelValue(s, "verb")
		switch verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE":
		default:
			continue
		}
		key := verb + " " + labelValue(s, "resource")
		if sub := labelValue(s, "subresource"); sub != "" {
			key += "/" + sub
		}
		out[key] += s.GetCounter().GetValue()
	}
	return out
}

func labelValue(s *dto.Metric, name string) string {
	for _, lp := range s.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
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

// prepare creates objects [from, to)'s prerequisites, before the clock starts.
func (r *workloadRun) prepare(ctx context.Context, c client.Client, from, to int) error {
	return parallel(ctx, from, to, r.Clients, func(ctx context.Context, i int) error {
		return r.w.Prepare(ctx, c, benchNamespace, i)
	})
}

// create creates objects [from, to), as a user applying many at once would.
func (r *workloadRun) create(ctx context.Context, c client.Client, from, to int) error {
	return parallel(ctx, from, to, r.Clients, func(ctx context.Context, i int) error {
		return r.w.Create(ctx, c, benchNamespace, i)
	})
}

// floorRun times the tight client alone on a fresh control plane, and the CPU the control plane spent.
func (r *workloadRun) floorRun(ctx context.Context, n int) (time.Duration, map[string]float64, error) {
	e, err := r.startEnv(ctx, fmt.Sprintf("floor-%d", n))
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = e.stop() }()
	if err := r.prepare(ctx, e.client, 0, n); err != nil {
		return 0, nil, err
	}
	t, err := newTracker(ctx, e.cfg, benchNamespace, r.w.NewObserver())
	if err != nil {
		return 0, nil, err
	}
	defer t.stop()
	snap0, err := e.snapshot(ctx)
	if err != nil {
		return 0, nil, err
	}
	reached := t.expect(n)
	defer e.profileAPIServer(ctx, 15*time.Second, filepath.Join(r.logDir, fmt.Sprintf("apiserver-floor-%d.pb.gz", n)))()
	start := time.Now()
	if err := parallel(ctx, 0, n, r.Clients, func(ctx context.Context, i int) error {
		return r.w.Floor(ctx, e.client, benchNamespace, i)
	}); err != nil {
		return 0, nil, err
	}
	if err := r.awaitConverged(ctx, reached, t, n, nil); err != nil {
		return 0, nil, err
	}
	took := t.lastConverged().Sub(start)
	snap1, err := e.snapshot(ctx)
	return took, diff(snap1.cpu, snap0.cpu), err
}

// operatorRun times the operator converging n objects the bench creates at once, on a fresh control
// plane; after, when set, runs on the converged cluster before it is torn down.
func (r *workloadRun) operatorRun(ctx context.Context, n int, args []string, conv *convergence, after func(context.Context, *env, *operator) error) error {
	e, err := r.startEnv(ctx, fmt.Sprintf("operator-%d", n))
	if err != nil {
		return err
	}
	defer func() { _ = e.stop() }()
	if err := r.prepare(ctx, e.client, 0, n); err != nil {
		return err
	}
	op, err := r.startOperator(ctx, e, fmt.Sprintf("%d", n), args)
	if err != nil {
		return err
	}
	defer func() { _ = op.Stop() }()
	// Where the operator's CPU goes while it converges (the first -cpu-profile, 20 s): cpu-<n>.pb.gz.
	op.profileCPU(ctx, r.CPUProfile, filepath.Join(r.logDir, fmt.Sprintf("cpu-%d.pb.gz", n)))
	defer e.profileAPIServer(ctx, 15*time.Second, filepath.Join(r.logDir, fmt.Sprintf("apiserver-operator-%d.pb.gz", n)))()
	t, err := newTracker(ctx, e.cfg, benchNamespace, r.w.NewObserver())
	if err != nil {
		return err
	}
	defer t.stop()
	// The operator has listed its (empty) world once /readyz answers and its informers synced; give
	// them a moment so the baseline holds their start-up requests.
	if _, _, err := op.waitIdle(ctx, nil, 0, time.Second, time.Minute); err != nil {
		return err
	}
	base, err := op.Scrape(ctx)
	if err != nil {
		return err
	}
	serverBase, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	counters0, err := countersOf(r.w)
	if err != nil {
		return err
	}
	reached := t.expect(n)
	start := time.Now()
	if err := r.create(ctx, e.client, 0, n); err != nil {
		return err
	}
	conv.CreatesDone = time.Since(start)
	if err := r.awaitConverged(ctx, reached, t, n, op); err != nil {
		return err
	}
	conv.Operator = t.lastConverged().Sub(start)
	atConvergedServer, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	conv.CPU = diff(atConvergedServer.cpu, serverBase.cpu)
	atConverged, err := op.Scrape(ctx)
	if err != nil {
		return err
	}
	conv.CPU["operator"] = atConverged.Sum("process_cpu_seconds_total", nil) - base.Sum("process_cpu_seconds_total", nil)
	// Writes the operator makes after the last object converged (a late event, say) count too.
	m, _, err := op.waitIdle(ctx, base, float64(n), 2*time.Second, r.Timeout)
	if err != nil {
		return err
	}
	conv.Requests = requestsOf(m).minus(requestsOf(base))
	conv.Reconciles = op.reconciles(m) - op.reconciles(base)
	counters1, err := countersOf(r.w)
	if err != nil {
		return err
	}
	conv.Counters = counted(counters1, counters0)
	serverAfter, err := e.snapshot(ctx)
	if err != nil {
		return err
	}
	conv.ServerWrites = diff(serverAfter.writes, serverBase.writes)
	own := "POST " + r.info.Resource // the bench's own creates
	if conv.ServerWrites[own] -= float64(n); conv.ServerWrites[own] <= 0 {
		delete(conv.ServerWrites, own)
	}
	if after != nil {
		return after(ctx, e, op)
	}
	return nil
}

// awaitConverged waits for reached, reporting progress, and fails after r.Timeout or when the operator exits.
func (r *workloadRun) awaitConverged(ctx context.Context, reached <-chan struct{}, t *tracker, n int, op *operator) error {
	var exited <-chan struct{}
	if op != nil {
		exited = op.Done()
	}
	timeout := time.After(r.Timeout)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-reached:
			return nil
		case <-exited:
			return op.exited()
		case <-timeout:
			return fmt.Errorf("only %d of %d %s converged after %s", t.convergedCount(), n, r.info.Nouns, r.Timeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			r.logf("  %d/%d converged", t.convergedCount(), n)
		}
	}
}

// steadyAndChurn measures, on a converged cluster of n objects, the quiet after convergence, a restart's
// resync, and the latency of spec edits under churn.
func (r *workloadRun) steadyAndChurn(ctx context.Context, e *env, op *operator, n int, res *results) error {
	st := steady{N: n, Window: r.SteadyWindow}
	s0, err := op.Scrape(ctx)
	if err != nil {
		return err
	}
	select {
	case <-time.After(r.SteadyWindow):
	case <-ctx.Done():
		return ctx.Err()
	}
	s1, err := op.Scrape(ctx)
	if err != nil {
		return err
	}
	st.WindowWrites = requestsOf(s1).minus(requestsOf(s0)).Writes
	st.WindowReconciles = op.reconciles(s1) - op.reconciles(s0)

	if err := op.Stop(); err != nil {
		return err
	}
	counters0, err := countersOf(r.w)
	if err != nil {
		return err
	}
	op2, err := r.startOperator(ctx, e, fmt.Sprintf("%d-restart", n), r.Args)
	if err != nil {
		return err
	}
	defer func() { _ = op2.Stop() }()
	// ... and while it resyncs after the restart: cpu-<n>-restart.pb.gz.
	op2.profileCPU(ctx, min(r.CPUProfile, 5*time.Second), filepath.Join(r.logDir, fmt.Sprintf("cpu-%d-restart.pb.gz", n)))
	st.RestartReady = op2.ReadyAfter
	// The resync of a fast operator is over in well under a second: scrape often enough to time it (a scrape costs the operator CPU: not more often).
	op2.poll = 50 * time.Millisecond
	m, last, err := op2.waitIdle(ctx, nil, float64(n), 3*time.Second, r.Timeout)
	op2.poll = 100 * time.Millisecond
	if err != nil {
		return err
	}
	st.Resync = last.Sub(op2.StartedAt)
	workers, err := op2.workersStarted()
	if err != nil {
		return err
	}
	st.WorkersAfter, st.ResyncWork = workers.Sub(op2.StartedAt), last.Sub(workers)
	st.ResyncReconciles = op2.reconciles(m)
	st.ResyncRequests = requestsOf(m)
	st.ReconcileMean = op2.reconcileMean(m)
	counters1, err := countersOf(r.w)
	if err != nil {
		return err
	}
	st.ResyncCounters = counted(counters1, counters0)
	res.Steady = st
	r.logf("%s steady N=%d: %.0f writes in %s; restart resync %s (%s after the workers started: %.0f reconciles/s), %.0f writes",
		r.info.Name, n, st.WindowWrites, r.SteadyWindow, st.Resync.Round(time.Millisecond), st.ResyncWork.Round(time.Millisecond),
		st.ResyncReconciles/max(st.ResyncWork.Seconds(), 1e-9), st.ResyncRequests.Writes)

	t, err := newTracker(ctx, e.cfg, benchNamespace, r.w.NewObserver())
	if err != nil {
		return err
	}
	defer t.stop()
	ch := churnResult{N: n, Rate: r.ChurnRate, Duration: r.ChurnDuration}
	b0, err := op2.Scrape(ctx)
	if err != nil {
		return err
	}
	if ch.Sent, err = churn(ctx, e.client, r.w, t, benchNamespace, n, r.ChurnRate, r.ChurnDuration); err != nil {
		return err
	}
	// Give the last edits up to 30s to be applied; the ones still pending are reported as such.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, _, pending := t.latencies()
		return pending == 0, nil
	}); err != nil && ctx.Err() != nil {
		return err
	}
	b1, _, err := op2.waitIdle(ctx, b0, 0, time.Second, r.Timeout)
	if err != nil {
		return err
	}
	written, applied, pending := t.latencies()
	ch.Applied, ch.Pending = len(applied), pending
	ch.WrittenP50, ch.WrittenP99 = percentile(written, 50), percentile(written, 99)
	ch.AppliedP50, ch.AppliedP99, ch.AppliedMax = percentile(applied, 50), percentile(applied, 99), percentile(applied, 100)
	ch.Requests = requestsOf(b1).minus(requestsOf(b0))
	ch.Reconciles = op2.reconciles(b1) - op2.reconciles(b0)
	res.Churn = ch
	r.logf("%s churn: %d edits, p50 %s p99 %s", r.info.Name, ch.Sent, ch.AppliedP50, ch.AppliedP99)
	return nil
}

// trimWait bounds the wait for the idle operator's trim: elected, synced, then a 5 s idle window.
const trimWait = time.Minute

// trimsStartPages says whether an operator run with args gives back its start's pages (the default).
func trimsStartPages(args []string) bool {
	trims := true
	for _, a := range args {
		switch a {
		case "--trim-start-pages=false", "-trim-start-pages=false":
			trims = false
		case "--trim-start-pages", "-trim-start-pages", "--trim-start-pages=true", "-trim-start-pages=true":
			trims = true
		}
	}
	return trims
}

// memoryRun grows one cluster through r.MemorySizes and then adds unrelated objects, measuring the
// operator after each step, and once more after a restart.
func (r *workloadRun) memoryRun(ctx context.Context) ([]memPoint, error) {
	e, err := r.startEnv(ctx, "memory")
	if err != nil {
		return nil, err
	}
	defer func() { _ = e.stop() }()
	op, err := r.startOperator(ctx, e, "memory", r.Args)
	if err != nil {
		return nil, err
	}
	defer func() { _ = op.Stop() }()
	t, err := newTracker(ctx, e.cfg, benchNamespace, r.w.NewObserver())
	if err != nil {
		return nil, err
	}
	defer t.stop()

	nouns := r.info.Nouns
	var points []memPoint
	measure := func(o *operator, label string, n, unrelated int, took time.Duration) error {
		if _, _, err := o.waitIdle(ctx, nil, 0, 2*time.Second, r.Timeout); err != nil {
			return err
		}
		// The idle operator's figure is the one after its trim, which comes once it has been idle a
		// few seconds; the other points are read as they come, and say whether it had happened.
		if n == 0 && unrelated == 0 && trimsStartPages(r.Args) && !o.awaitTrim(ctx, trimWait) {
			r.logf("%s memory %s: no trim of the start's pages within %s; read untrimmed", r.info.Name, label, trimWait)
		}
		mem, err := o.memory(ctx)
		if err != nil {
			return err
		}
		// For `go tool pprof -top bin/platform-operator <file>` when a figure needs explaining.
		name := fmt.Sprintf("heap-%d-%d", n, unrelated)
		if o != op {
			name += "-restart" // the restarted operator's: not to overwrite the point before the restart
		}
		if err := o.saveHeapProfile(ctx, filepath.Join(r.logDir, name+".pb.gz")); err != nil {
			return err
		}
		points = append(points, memPoint{Label: label, Objects: n, Unrelated: unrelated, Mem: mem, Converged: took, Trimmed: o.trimmed()})
		r.logf("%s memory %s: heap %.1f MiB, RSS %.1f MiB; %s", r.info.Name, label, mem.HeapInuse/(1<<20), mem.RSS/(1<<20),
			o.metricsSize(ctx))
		return nil
	}
	have := 0
	for _, n := range r.info.sizes(r.MemorySizes) {
		var took time.Duration
		if n > have {
			if err := r.prepare(ctx, e.client, have, n); err != nil {
				return points, err
			}
			reached := t.expect(n)
			start := time.Now()
			if err := r.create(ctx, e.client, have, n); err != nil {
				return points, err
			}
			if err := r.awaitConverged(ctx, reached, t, n, op); err != nil {
				return points, err
			}
			took = t.lastConverged().Sub(start)
			have = n
		}
		if err := measure(op, fmt.Sprintf("%d %s", n, nouns), n, 0, took); err != nil {
			return points, err
		}
	}
	if r.Unrelated > 0 {
		if err := unrelated(ctx, e.client, r.Unrelated, 50, r.Clients); err != nil {
			return points, err
		}
		if err := measure(op, fmt.Sprintf("%d %s + unrelated", have, nouns), have, r.Unrelated, 0); err != nil {
			return points, err
		}
	}
	if err := op.Stop(); err != nil {
		return points, err
	}
	op2, err := r.startOperator(ctx, e, "memory-restart", r.Args)
	if err != nil {
		return points, err
	}
	defer func() { _ = op2.Stop() }()
	if _, _, err := op2.waitIdle(ctx, nil, float64(have), 2*time.Second, r.Timeout); err != nil {
		return points, err
	}
	label := fmt.Sprintf("%d %s, after restart", have, nouns)
	if r.Unrelated > 0 {
		label = fmt.Sprintf("%d %s + unrelated, after restart", have, nouns)
	}
	return points, measure(op2, label, have, r.Unrelated, 0)
}

// writeFile writes data to path through a temporary file, so a failed run leaves the old file whole.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// httpClient serves the bench's own plain-HTTP GETs: the operator's pprof and etcd's metrics, on
// 127.0.0.1. A forced GC on a large heap can take a while, hence the generous timeout.
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
