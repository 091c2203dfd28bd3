package main

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// TestTinyRun runs the whole bench at a tiny N for every registered workload: it proves the bench works
// end to end (control planes, operator processes, metrics, pprof, watches, each workload's floor and
// observer, report), not how fast anything is; `make bench` measures.
func TestTinyRun(t *testing.T) {
	c := tinyRunConfig(t, "starts four control planes per workload, and the postgres workload six more for its session points")
	c.Workloads = registered()
	c.Sizes, c.Clients, c.Timeout = []int{3}, 4, 2*time.Minute
	c.SteadyWindow, c.ChurnRate, c.ChurnDuration = time.Second, 10, time.Second
	c.MemorySizes, c.Unrelated = []int{0, 3}, 4
	c.Sweep = []sweepCase{{Name: "two workers", Args: []string{"--max-concurrent-reconciles=2"}}}
	c.SweepSize = 2
	// A profile holds the operator's shutdown until it ends: 1 s proves the profiles are taken without
	// adding the 20 s of -cpu-profile to each of the tiny run's operators.
	c.CPUProfile = time.Second
	// The postgres workload's session points (-postgres-session-points, 1, 4 and 8 sessions) at the same N.
	defaultPointSize := *pgPointSize
	*pgPointSize = 3
	t.Cleanup(func() { *pgPointSize = defaultPointSize })
	rep := &report{Started: time.Now()}
	for _, w := range c.Workloads {
		info := w.Info()
		t.Run(info.Name, func(t *testing.T) {
			timeout := 5 * time.Minute
			if info.Name == "postgres" {
				// Each session point is two more control planes and an operator: about 30 s on a quiet machine.
				timeout += time.Duration(len(pgSessionPoints)) * time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			res, err := c.runWorkload(ctx, w)
			if err != nil {
				t.Fatalf("bench: %v (logs in %s)", err, c.LogDir)
			}
			rep.Workloads = append(rep.Workloads, res)
			checkTinyRun(t, info, res)
		})
	}
	rep.Finished = time.Now()

	doc := render(c, rep)
	for _, res := range rep.Workloads {
		info := res.Workload.Info()
		if info.Name == "postgres" && !strings.Contains(doc, "#### Creates at each session budget (N = 3, same run)") {
			t.Errorf("report lacks the postgres workload's session points")
		}
		for _, heading := range []string{"### " + info.Kind, "#### 1. Convergence", "#### 2. API requests", "#### 3. Steady state",
			"#### 4. Memory", "#### 5. Latency", "#### Tuning sweep"} {
			if !strings.Contains(doc, heading) {
				t.Errorf("report lacks %q", heading)
			}
		}
	}
}

// checkTinyRun asserts that every measurement of a tiny run of one workload happened and is plausible.
func checkTinyRun(t *testing.T, info Info, res *results) {
	t.Helper()
	if len(res.Convergence) != 1 {
		t.Fatalf("%d convergence results, want 1", len(res.Convergence))
	}
	cv := res.Convergence[0]
	if cv.Floor <= 0 || cv.Operator <= 0 {
		t.Errorf("convergence times not measured: floor %s, operator %s", cv.Floor, cv.Operator)
	}
	// Every object needs its children and a status: fewer writes means the metrics were misread.
	minimum := float64(cv.N * info.MinWrites())
	if cv.Requests.Writes < minimum {
		t.Errorf("operator writes %v, fewer than the minimum %v", cv.Requests.Writes, minimum)
	}
	serverWrites := 0.0
	for _, v := range cv.ServerWrites {
		serverWrites += v
	}
	if serverWrites < minimum {
		t.Errorf("API server counted %v writes, fewer than the minimum %v: %v", serverWrites, minimum, cv.ServerWrites)
	}
	if _, ok := cv.ServerWrites["POST "+info.Resource]; ok {
		t.Errorf("the bench's own creates of %s are counted as the operator's: %v", info.Resource, cv.ServerWrites)
	}
	if res.Steady.ResyncReconciles < float64(cv.N) || res.Steady.Resync <= 0 || res.Steady.ResyncWork <= 0 || res.Steady.WorkersAfter <= 0 {
		t.Errorf("restart resync not measured: %+v", res.Steady)
	}
	if ch := res.Churn; ch.Sent == 0 || ch.Applied != ch.Sent || ch.AppliedP99 <= 0 || ch.WrittenP99 <= 0 {
		t.Errorf("churn: %d edits sent, %d applied, p99 written %s, applied %s", ch.Sent, ch.Applied, ch.WrittenP99, ch.AppliedP99)
	}
	if len(res.Memory) != 4 {
		t.Fatalf("%d memory points, want 4 (0, 3, unrelated, restart): %+v", len(res.Memory), res.Memory)
	}
	for _, p := range res.Memory {
		if p.Mem.HeapInuse <= 0 || p.Mem.RSS < p.Mem.HeapInuse {
			t.Errorf("memory %s: heap %v, RSS %v", p.Label, p.Mem.HeapInuse, p.Mem.RSS)
		}
	}
	if len(res.Sweep) != 1 || res.Sweep[0].Operator <= 0 {
		t.Errorf("sweep: %+v", res.Sweep)
	}
	if info.Name == "postgres" {
		checkSessionPoints(t, cv.N, res.Extra)
	} else if res.Extra != nil {
		t.Errorf("%s measured something of its own: %+v", info.Name, res.Extra)
	}
}

// tinyRunConfig is the configuration of a tiny run (the repository, the operator binary, a log directory
// of t's); with -short the test is skipped, saying why (what the run starts).
func tinyRunConfig(t *testing.T, starts string) *config {
	t.Helper()
	if testing.Short() {
		t.Skip(starts)
	}
	// As in main: the caches log through controller-runtime, and the run reports its own progress.
	ctrllog.SetLogger(logr.Discard())
	root := testutil.RepoRoot(t)
	return &config{RepoRoot: root, Operator: operatorBinary(t, root), LogDir: t.TempDir()}
}

// operatorBinary is $OPERATOR_BINARY (make sets it to bin/platform-operator), else a fresh build.
func operatorBinary(t *testing.T, root string) string {
	if p := os.Getenv("OPERATOR_BINARY"); p != "" {
		return p
	}
	out := filepath.Join(t.TempDir(), "platform-operator")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestSplice(t *testing.T) {
	block := func(s string) string { return beginMarker + "\n" + s + endMarker }
	tests := []struct{ name, doc, section, want string }{
		{"no markers: appended", "# Perf\n\nhand-written\n", "new\n", "# Perf\n\nhand-written\n\n" + block("new\n") + "\n"},
		{"markers: replaced, the rest kept", "# Perf\n" + block("old\n") + "\n## Tuning\n", "new\n", "# Perf\n" + block("new\n") + "\n## Tuning\n"},
		{"empty doc", "", "new\n", "\n\n" + block("new\n") + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splice(tt.doc, tt.section); got != tt.want {
				t.Errorf("splice:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestParseSweep(t *testing.T) {
	got := parseSweep(" --a=1 --b=2 ;; --c ")
	if len(got) != 2 || got[0].Name != "`--a=1 --b=2`" || len(got[0].Args) != 2 || got[1].Args[0] != "--c" {
		t.Errorf("parseSweep = %+v", got)
	}
	if parseSweep("") != nil {
		t.Error("an empty sweep should have no cases")
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {99, 10}, {100, 10}, {10, 1}, {0, 1}}
	for _, tt := range tests {
		if got := percentile(ds, tt.p); got != tt.want {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing should be 0")
	}
}

func TestOperatorMetrics(t *testing.T) {
	m, err := localcluster.ParseMetrics(strings.NewReader(`# HELP rest_client_requests_total x
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 12
rest_client_requests_total{code="201",host="127.0.0.1:1",method="POST"} 3
rest_client_requests_total{code="200",host="127.0.0.1:1",method="PATCH"} 4
rest_client_requests_total_other{method="PUT"} 100
controller_runtime_reconcile_total{controller="ergonetwork",result="success"} 7
controller_runtime_reconcile_total{controller="ergonetwork",result="error"} 1
controller_runtime_reconcile_total{controller="other",result="success"} 9
controller_runtime_reconcile_total{controller="third",result="success"} 20
workqueue_depth{controller="ergonetwork",name="ergonetwork"} 2
workqueue_depth{controller="other",name="other"} 5
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="ergonetwork",le="+Inf"} 8
controller_runtime_reconcile_time_seconds_sum{controller="ergonetwork"} 0.4
controller_runtime_reconcile_time_seconds_count{controller="ergonetwork"} 8
`))
	if err != nil {
		t.Fatal(err)
	}
	r := requestsOf(m)
	if r.Writes != 7 || r.Reads != 12 || r.ByMethod["PUT"] != 0 {
		t.Errorf("requests = %+v, want 7 writes and 12 reads", r)
	}
	tests := []struct {
		controllers       []string
		reconciles, queue float64
		mean              time.Duration
	}{
		{[]string{"ergonetwork"}, 8, 2, 50 * time.Millisecond},
		{[]string{"ergonetwork", "other"}, 17, 7, 50 * time.Millisecond},
		{[]string{"absent"}, 0, 0, 0},
	}
	for _, tt := range tests {
		op := &operator{controllers: tt.controllers}
		if got := op.reconciles(m); got != tt.reconciles {
			t.Errorf("%v: reconciles %v, want %v", tt.controllers, got, tt.reconciles)
		}
		if got := op.queueDepth(m); got != tt.queue {
			t.Errorf("%v: queue %v, want %v", tt.controllers, got, tt.queue)
		}
		if got := op.reconcileMean(m); got != tt.mean {
			t.Errorf("%v: mean reconcile %v, want %v", tt.controllers, got, tt.mean)
		}
	}
}

func TestServerWrites(t *testing.T) {
	m, err := localcluster.ParseMetrics(strings.NewReader(`# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="ergonetworks",subresource="",verb="POST"} 3
apiserver_request_total{code="200",resource="ergonetworks",subresource="status",verb="PATCH"} 3
apiserver_request_total{code="200",resource="configmaps",subresource="",verb="APPLY"} 2
apiserver_request_total{code="409",resource="configmaps",subresource="",verb="APPLY"} 1
apiserver_request_total{code="200",resource="configmaps",subresource="",verb="GET"} 50
apiserver_request_total{code="200",resource="configmaps",subresource="",verb="WATCH"} 5
`))
	if err != nil {
		t.Fatal(err)
	}
	got := serverWrites(m)
	want := map[string]float64{"POST ergonetworks": 3, "PATCH ergonetworks/status": 3, "APPLY configmaps": 3}
	if !maps.Equal(got, want) {
		t.Errorf("serverWrites = %v, want %v", got, want)
	}
}
