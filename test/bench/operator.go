package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/platform-operator/platform-operator/internal/kit/memtrim"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// operator is one platform-operator process under measurement (localcluster.StartOperator, with pprof),
// and the controllers whose reconciles and work queues the bench follows.
type operator struct {
	*localcluster.Operator
	controllers []string
	// poll is how often waitIdle scrapes the metrics, and so the resolution of the time it returns.
	poll time.Duration
}

// trimmed says whether the operator's log says it gave back its start's pages (memtrim).
func (o *operator) trimmed() bool {
	b, err := os.ReadFile(o.LogPath)
	return err == nil && bytes.Contains(b, []byte(memtrim.TrimmedMessage))
}

// awaitTrim waits until the operator has given back its start's pages, at most limit: a manager trims
// once it has been idle for a few seconds after its start (--trim-start-pages). It says whether it did.
func (o *operator) awaitTrim(ctx context.Context, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !o.trimmed() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
	return true
}

// operatorStopTimeout leaves a large operator time to shut its caches down before it is killed.
const operatorStopTimeout = 30 * time.Second

// startOperator runs the operator on e's control plane with the workload's flags and environment, then
// extra flags, and waits for /readyz; its log is operator-<name>.log in the workload's log directory.
func (r *workloadRun) startOperator(ctx context.Context, e *env, name string, extra []string) (*operator, error) {
	op, err := localcluster.StartOperator(ctx, localcluster.OperatorOptions{
		Binary:     r.Operator,
		Kubeconfig: e.cluster.KubeconfigPath(),
		Name:       name,
		LogDir:     r.logDir,
		// Timestamps to the nanosecond, for workersStarted.
		Args:        append(append([]string{"--zap-time-encoding=rfc3339nano"}, r.info.OperatorArgs...), extra...),
		Env:         r.info.OperatorEnv,
		Pprof:       true,
		StopTimeout: operatorStopTimeout,
	})
	if err != nil {
		return nil, err
	}
	return &operator{Operator: op, controllers: r.info.Controllers, poll: 100 * time.Millisecond}, nil
}

// workersStarted is when the first of the operator's measured controllers logged "Starting workers":
// its informers had listed what they watch, and reconciles could begin.
func (o *operator) workersStarted() (time.Time, error) {
	data, err := os.ReadFile(o.LogPath)
	if err != nil {
		return time.Time{}, err
	}
	var first time.Time
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, `"msg":"Starting workers"`) {
			continue
		}
		var entry struct {
			TS         string `json:"ts"`
			Controller string `json:"controller"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || !slices.Contains(o.controllers, entry.Controller) {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, entry.TS)
		if err != nil {
			return time.Time{}, fmt.Errorf("operator log %s: timestamp %q: %w", o.LogPath, entry.TS, err)
		}
		if first.IsZero() || ts.Before(first) {
			first = ts
		}
	}
	if first.IsZero() {
		return time.Time{}, fmt.Errorf("operator log %s: no \"Starting workers\" line of %v", o.LogPath, o.controllers)
	}
	return first, nil
}

// metrics is one scrape of a /metrics endpoint.
type metrics = localcluster.Metrics

// requests is what the operator's clients sent, from client-go's rest_client_requests_total.
type requests struct {
	Writes, Reads float64
	ByMethod      map[string]float64
}

var writeMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

func requestsOf(m metrics) requests {
	r := requests{ByMethod: m.SumBy("rest_client_requests_total", "method", nil)}
	for method, v := range r.ByMethod {
		if writeMethods[method] {
			r.Writes += v
		} else {
			r.Reads += v
		}
	}
	return r
}

func (r requests) minus(before requests) requests {
	out := requests{Writes: r.Writes - before.Writes, Reads: r.Reads - before.Reads, ByMethod: map[string]float64{}}
	for k, v := range r.ByMethod {
		out.ByMethod[k] = v - before.ByMethod[k]
	}
	return out
}

// sumControllers adds series name over the operator's controllers, selected by label (controller for
// controller-runtime's metrics, name for the work queues').
func (o *operator) sumControllers(m metrics, name, label string) float64 {
	total := 0.0
	for _, c := range o.controllers {
		total += m.Sum(name, map[string]string{label: c})
	}
	return total
}

// reconciles is the workload's controllers' finished reconciles, whatever their result.
func (o *operator) reconciles(m metrics) float64 {
	return o.sumControllers(m, "controller_runtime_reconcile_total", "controller")
}

// queueDepth is the length of the workload's controllers' work queues.
func (o *operator) queueDepth(m metrics) float64 {
	return o.sumControllers(m, "workqueue_depth", "name")
}

// reconcileMean is the mean time of the reconciles m counts.
func (o *operator) reconcileMean(m metrics) time.Duration {
	cnt := o.sumControllers(m, "controller_runtime_reconcile_time_seconds_count", "controller")
	if cnt == 0 {
		return 0
	}
	sum := o.sumControllers(m, "controller_runtime_reconcile_time_seconds_sum", "controller")
	return time.Duration(sum / cnt * float64(time.Second))
}

// memory is the operator's footprint after a forced garbage collection.
type memory struct {
	HeapInuse, HeapAlloc, RSS float64 // bytes
}

var memStat = regexp.MustCompile(`(?m)^# (HeapAlloc|HeapInuse) = (\d+)`)

// memory forces a GC through pprof (heap?gc=1), reads the heap figures pprof prints, then the RSS.
func (o *operator) memory(ctx context.Context) (memory, error) {
	var out memory
	text, err := httpGet(ctx, "http://"+o.PprofAddr+"/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return out, err
	}
	for _, m := range memStat.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		switch m[1] {
		case "HeapAlloc":
			out.HeapAlloc = v
		case "HeapInuse":
			out.HeapInuse = v
		}
	}
	if out.HeapAlloc == 0 {
		return out, fmt.Errorf("no HeapAlloc in the pprof heap profile")
	}
	out.RSS, err = rss(o.PID())
	return out, err
}

// saveHeapProfile writes the operator's heap profile to path.
func (o *operator) saveHeapProfile(ctx context.Context, path string) error {
	data, err := httpGet(ctx, "http://"+o.PprofAddr+"/debug/pprof/heap")
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o644)
}

// profileCPU records the operator's CPU profile for the next d in the background, into path (for
// `go tool pprof -top bin/platform-operator <file>`); a profile that cannot be taken is left out, since the
// figures do not depend on it. d below a second is none.
func (o *operator) profileCPU(ctx context.Context, d time.Duration, path string) {
	if d < time.Second {
		return
	}
	go func() {
		data, err := httpGet(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", o.PprofAddr, int(d.Seconds())))
		if err == nil {
			_ = os.WriteFile(path, []byte(data), 0o644)
		}
	}()
}

// rss is VmRSS from /proc/<pid>/status, in bytes.
func rss(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseFloat(f[0], 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// exited is the error of an operator that is no longer running, nil while it runs.
func (o *operator) exited() error {
	select {
	case <-o.Done():
		return fmt.Errorf("operator exited: %v (log: %s)\n%s", o.Err(), o.LogPath, o.Tail(20))
	default:
		return nil
	}
}

// waitIdle waits until the operator has finished at least minReconciles reconciles since base, its queue
// is empty and the reconcile count has not moved for quiet. It returns the last scrape and the time of the
// last reconcile it saw.
func (o *operator) waitIdle(ctx context.Context, base metrics, minReconciles float64, quiet, timeout time.Duration) (metrics, time.Time, error) {
	var (
		m         metrics
		n         float64
		last      = -1.0
		lastMoved = time.Now()
	)
	err := wait.PollUntilContextTimeout(ctx, o.poll, timeout, true, func(ctx context.Context) (bool, error) {
		if err := o.exited(); err != nil {
			return false, err
		}
		var err error
		if m, err = o.Scrape(ctx); err != nil {
			return false, err
		}
		if n = o.reconciles(m) - o.reconciles(base); n != last {
			last, lastMoved = n, time.Now()
		}
		return n >= minReconciles && o.queueDepth(m) == 0 && time.Since(lastMoved) >= quiet, nil
	})
	if err != nil && ctx.Err() == nil && wait.Interrupted(err) {
		err = fmt.Errorf("operator not idle after %s: %.0f of %.0f reconciles, queue %.0f", timeout, n, minReconciles, o.queueDepth(m))
	}
	return m, lastMoved, err
}

// metricsSize scrapes the operator's /metrics once and says what a Prometheus scrape of it carries:
// its samples (one per series, a histogram's buckets, _sum and _count included), those of the operator's
// own platform_operator_ metrics, its bytes, and how long the scrape took (the collectors compute their
// gauges over the cache at scrape time). The bench logs it beside each memory reading.
func (o *operator) metricsSize(ctx context.Context) string {
	start := time.Now()
	text, err := httpGet(ctx, "http://"+o.MetricsAddr+"/metrics")
	took := time.Since(start)
	if err != nil {
		return "metrics scrape failed: " + err.Error()
	}
	all, ours := 0, 0
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		all++
		if strings.HasPrefix(line, "platform_operator_") {
			ours++
		}
	}
	return fmt.Sprintf("/metrics: %d series (%d platform_operator_), %d bytes, scraped in %s",
		all, ours, len(text), took.Round(time.Microsecond))
}
