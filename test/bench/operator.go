package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/platform-operator/platform-operator/internal/localcluster"
	"github.com/platform-operator/platform-operator/internal/promtext"
)

// operator is one platform-operator process under measurement, with its probes, plain-HTTP metrics and
// pprof on 127.0.0.1.
type operator struct {
	child       *localcluster.Child
	probeAddr   string
	metricsAddr string
	pprofAddr   string
	startedAt   time.Time
	readyAfter  time.Duration
	logPath     string
	stopTimeout time.Duration
}

// startOperator runs binary against kubeconfig with extra flags and waits for /readyz.
func startOperator(ctx context.Context, binary, kubeconfig, logDir, name string, extra []string) (*operator, error) {
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	op := &operator{
		probeAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		metricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
		pprofAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2])),
		logPath:     filepath.Join(logDir, "operator-"+name+".log"),
		stopTimeout: 30 * time.Second,
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--health-probe-bind-address=" + op.probeAddr,
		"--metrics-bind-address=" + op.metricsAddr,
		"--metrics-secure=false",
		"--pprof-bind-address=" + op.pprofAddr,
		"--leader-elect=false",
	}, extra...)
	env := []string{"RELATED_IMAGE_ERGO=registry.example/ergochat/ergo:bench"}
	for _, e := range os.Environ() {
		switch k, _, _ := strings.Cut(e, "="); k {
		case "KUBECONFIG", "WATCH_NAMESPACE", "RELATED_IMAGE_ERGO", "POD_NAMESPACE":
		default:
			env = append(env, e)
		}
	}
	log, err := os.Create(op.logPath)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "# %s %s\n", binary, strings.Join(args, " "))
	op.startedAt = time.Now()
	if op.child, err = localcluster.StartChild("operator "+name, binary, args, env, log); err != nil {
		return nil, err
	}
	if err := op.child.WaitReady(ctx, 60*time.Second, localcluster.HealthCheck("http://"+op.probeAddr+"/readyz")); err != nil {
		_ = op.child.Stop(op.stopTimeout)
		return nil, fmt.Errorf("%w (log: %s)", err, op.logPath)
	}
	op.readyAfter = time.Since(op.startedAt)
	return op, nil
}

func (o *operator) stop() error { return o.child.Stop(o.stopTimeout) }

// metrics is one scrape of the operator's /metrics.
type metrics struct{ promtext.Samples }

func (o *operator) scrape(ctx context.Context) (metrics, error) {
	text, err := httpGet(ctx, "http://"+o.metricsAddr+"/metrics")
	if err != nil {
		return metrics{}, err
	}
	s, err := promtext.Parse(text)
	return metrics{s}, err
}

// requests is what the operator's clients sent, from client-go's rest_client_requests_total.
type requests struct {
	Writes, Reads float64
	ByMethod      map[string]float64
}

var writeMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

var methodLabel = regexp.MustCompile(`method="([A-Z]+)"`)

func (m metrics) requests() requests {
	r := requests{ByMethod: map[string]float64{}}
	for series, v := range m.Samples {
		if !strings.HasPrefix(series, "rest_client_requests_total{") {
			continue
		}
		mm := methodLabel.FindStringSubmatch(series)
		if mm == nil {
			continue
		}
		r.ByMethod[mm[1]] += v
		if writeMethods[mm[1]] {
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

// reconciles is the ergonetwork controller's finished reconciles, whatever their result.
func (m metrics) reconciles() float64 {
	return m.Sum("controller_runtime_reconcile_total", `controller="ergonetwork"`)
}

// queueDepth is the ergonetwork work queue's length.
func (m metrics) queueDepth() float64 { return m.Sum("workqueue_depth", `name="ergonetwork"`) }

// memory is the operator's footprint after a forced garbage collection.
type memory struct {
	HeapInuse, HeapAlloc, RSS float64 // bytes
}

var memStat = regexp.MustCompile(`(?m)^# (HeapAlloc|HeapInuse) = (\d+)`)

// memory forces a GC through pprof (heap?gc=1), reads the heap figures pprof prints, then the RSS.
func (o *operator) memory(ctx context.Context) (memory, error) {
	var out memory
	text, err := httpGet(ctx, "http://"+o.pprofAddr+"/debug/pprof/heap?gc=1&debug=1")
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
	out.RSS, err = rss(o.child.PID())
	return out, err
}

// saveHeapProfile writes the operator's heap profile to path.
func (o *operator) saveHeapProfile(ctx context.Context, path string) error {
	data, err := httpGet(ctx, "http://"+o.pprofAddr+"/debug/pprof/heap")
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), 0o644)
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

// waitIdle waits until the operator has finished at least minReconciles reconciles since base, its queue
// is empty and the reconcile count has not moved for quiet. It returns the last scrape and the time of the
// last reconcile it saw.
func (o *operator) waitIdle(ctx context.Context, base metrics, minReconciles float64, quiet, timeout time.Duration) (metrics, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		last      = -1.0
		lastMoved = time.Now()
	)
	for {
		m, err := o.scrape(ctx)
		if err != nil {
			return metrics{}, lastMoved, err
		}
		n := m.reconciles() - base.reconciles()
		if n != last {
			last, lastMoved = n, time.Now()
		}
		if n >= minReconciles && m.queueDepth() == 0 && time.Since(lastMoved) >= quiet {
			return m, lastMoved, nil
		}
		select {
		case <-ctx.Done():
			return m, lastMoved, fmt.Errorf("operator not idle after %s: %.0f of %.0f reconciles, queue %.0f", timeout, n, minReconciles, m.queueDepth())
		case <-o.child.Done():
			return m, lastMoved, fmt.Errorf("operator exited: %v (log: %s)", o.child.Err(), o.logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
