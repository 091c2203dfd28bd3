package localcluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// fakeOperatorEnv makes this test binary play the operator (TestMain): the flags StartOperator gives,
// /readyz, /metrics and /debug/pprof/, SIGTERM for a clean exit.
const fakeOperatorEnv = "LOCALCLUSTER_FAKE_OPERATOR"

// fakeModeEnv changes how the fake behaves: "exit" gives up at once, "never-ready" answers /readyz 503,
// "metrics-never" is ready but never opens its metrics port.
const fakeModeEnv = "LOCALCLUSTER_FAKE_OPERATOR_MODE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeOperatorEnv) == "1" {
		os.Exit(fakeOperator(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeOperator(args []string) int {
	fs := flag.NewFlagSet("fake-operator", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "")
	metricsAddr := fs.String("metrics-bind-address", "0", "")
	secure := fs.Bool("metrics-secure", true, "")
	pprofAddr := fs.String("pprof-bind-address", "", "")
	leaderElect := fs.Bool("leader-elect", false, "")
	leaseNS := fs.String("leader-election-namespace", "", "")
	lease := fs.Duration("leader-elect-lease-duration", 15*time.Second, "")
	fs.Duration("leader-elect-renew-deadline", 10*time.Second, "")
	fs.Duration("leader-elect-retry-period", 2*time.Second, "")
	workers := fs.Int("max-concurrent-reconciles", 8, "")
	webhookHost := fs.String("webhook-host", "", "")
	webhookPort := fs.Int("webhook-port", 9443, "")
	webhookCertDir := fs.String("webhook-cert-dir", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, e := range os.Environ() {
		fmt.Printf("environ: %s\n", e)
	}
	if os.Getenv(fakeModeEnv) == "exit" {
		fmt.Println("giving up at once, as asked")
		return 3
	}
	if *kubeconfig == "" || *secure {
		fmt.Println("want --kubeconfig and --metrics-secure=false")
		return 2
	}
	serve := func(addr string, h http.Handler) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		go func() { _ = http.Serve(l, h) }()
	}
	// Like the manager: the probe port listens from the start, /readyz passes only once the webhook
	// server listens (main.go's StartedChecker), and the metrics server opens its port a moment after the
	// process is first ready. Both delays are there so that a StartOperator that did not wait for what
	// its caller talks to would be caught by the tests below.
	var webhooksUp, readyOnce atomic.Bool
	var scrapes atomic.Int64
	serveMetrics := func() {
		if os.Getenv(fakeModeEnv) == "metrics-never" {
			fmt.Println("never serving metrics, as asked")
			return
		}
		time.Sleep(300 * time.Millisecond)
		serve(*metricsAddr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			leading := 0
			if *leaderElect {
				leading = 1
			}
			fmt.Fprintf(w, "# TYPE fake_scrapes_total counter\nfake_scrapes_total{path=\"/metrics\"} %d\n", scrapes.Add(1))
			fmt.Fprintf(w, "# TYPE fake_leader gauge\nfake_leader{namespace=%q,lease=%q} %d\n", *leaseNS, lease.String(), leading)
			fmt.Fprintf(w, "# TYPE fake_workers gauge\nfake_workers %d\n", *workers)
		}))
		fmt.Println("metrics served")
	}
	serve(*probeAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			if os.Getenv(fakeModeEnv) == "never-ready" {
				fmt.Println("not ready, as asked")
				http.Error(w, "not ready, as asked", http.StatusServiceUnavailable)
				return
			}
			if !webhooksUp.Load() {
				http.Error(w, "webhook server not started", http.StatusServiceUnavailable)
				return
			}
			if readyOnce.CompareAndSwap(false, true) {
				go serveMetrics()
			}
		}
		fmt.Fprintln(w, "ok")
	}))
	if *pprofAddr != "" {
		serve(*pprofAddr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "pprof") }))
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		if err := serveFakeWebhooks(net.JoinHostPort(*webhookHost, strconv.Itoa(*webhookPort)), *webhookCertDir); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		webhooksUp.Store(true)
	}()
	fmt.Println("serving")
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	<-term
	fmt.Println("SIGTERM: stopping")
	return 0
}

// fakeOptions runs this test binary as the operator, logging into a directory of the test.
// startOperator starts an operator process with o, stopped when t ends unless the test stopped it with
// stop (whose error the test checks; a failed stop is tried again then).
func startOperator(t *testing.T, o OperatorOptions) (op *Operator, stop func() error) {
	t.Helper()
	op, err := StartOperator(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = op.Stop()
		}
	})
	return op, func() error {
		err := op.Stop()
		stopped = err == nil
		return err
	}
}

func fakeOptions(t *testing.T, mode string) OperatorOptions {
	t.Helper()
	dir := t.TempDir()
	return OperatorOptions{
		Binary:       os.Args[0],
		Kubeconfig:   filepath.Join(dir, "kubeconfig"),
		Name:         "fake",
		LogDir:       dir,
		Env:          []string{fakeOperatorEnv + "=1", fakeModeEnv + "=" + mode},
		ReadyTimeout: 30 * time.Second,
		StopTimeout:  5 * time.Second,
	}
}

func TestStartOperator(t *testing.T) {
	// What a developer's shell may hold must not reach the operator.
	t.Setenv("KUBECONFIG", "/from/the/shell")
	t.Setenv("WATCH_NAMESPACE", "from-the-shell")
	t.Setenv("RELATED_IMAGE_ERGO", "from-the-shell")
	t.Setenv("RELATED_IMAGE_OTHER", "from-the-shell")
	t.Setenv("LOCALCLUSTER_TEST_KEPT", "kept")

	o := fakeOptions(t, "")
	o.Env = append(o.Env, "WATCH_NAMESPACE=ns-1")
	o.Pprof = true
	o.LeaderElection = &LeaderElection{Namespace: "ns-1", LeaseDuration: 8 * time.Second}
	o.Args = []string{"--max-concurrent-reconciles=3"}
	op, stop := startOperator(t, o)
	if op.ReadyAfter <= 0 || op.StartedAt.IsZero() {
		t.Errorf("StartedAt %v, ReadyAfter %v: want both set", op.StartedAt, op.ReadyAfter)
	}
	if want := filepath.Join(o.LogDir, "operator-fake.log"); op.LogPath != want {
		t.Errorf("LogPath = %s, want %s", op.LogPath, want)
	}
	for _, a := range op.Addresses() {
		if host, _, _ := net.SplitHostPort(a); host != "127.0.0.1" {
			t.Errorf("address %s is not on 127.0.0.1", a)
		}
	}
	if len(op.Addresses()) != 4 {
		t.Errorf("Addresses() = %v, want probe, metrics, pprof and webhooks", op.Addresses())
	}

	m, err := op.Scrape(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Sum("fake_scrapes_total", map[string]string{"path": "/metrics"}); got != 1 {
		t.Errorf("fake_scrapes_total = %v, want 1", got)
	}
	if got := m.Sum("fake_leader", map[string]string{"namespace": "ns-1", "lease": "8s"}); got != 1 {
		t.Errorf("fake_leader{namespace=ns-1,lease=8s} = %v, want 1: the leader election flags did not arrive (%v)", got, op.Args)
	}
	if got := m.Sum("fake_workers", nil); got != 3 {
		t.Errorf("fake_workers = %v, want 3: Args did not win over the defaults", got)
	}
	resp, err := metricsClient.Get("http://" + op.PprofAddr + "/debug/pprof/")
	if err != nil {
		t.Fatalf("pprof: %v", err)
	}
	_ = resp.Body.Close()

	if err := stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := op.Err(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
	if err := op.CheckStopped(); err != nil {
		t.Error(err)
	}

	log, err := os.ReadFile(op.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(log), "\n")
	if want := "# " + o.Binary + " " + strings.Join(op.Args, " "); header != want {
		t.Errorf("log header = %q, want %q", header, want)
	}
	for _, want := range []string{"environ: WATCH_NAMESPACE=ns-1\n", "environ: LOCALCLUSTER_TEST_KEPT=kept\n", "SIGTERM: stopping"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	for _, leaked := range []string{"from-the-shell", "/from/the/shell", "RELATED_IMAGE_OTHER"} {
		if strings.Contains(string(log), leaked) {
			t.Errorf("the operator got %q from the parent's environment:\n%s", leaked, log)
		}
	}
	if got := op.Tail(1); got != "SIGTERM: stopping" {
		t.Errorf("Tail(1) = %q", got)
	}
}

func TestStartOperatorOutput(t *testing.T) {
	o := fakeOptions(t, "")
	o.LogDir = ""
	var out testutil.SyncBuffer
	o.Output = &out
	op, err := StartOperator(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Stop(); err != nil {
		t.Error(err)
	}
	if op.LogPath != "" || op.Tail(5) != "" {
		t.Errorf("LogPath %q, Tail %q: want no log file", op.LogPath, op.Tail(5))
	}
	if !strings.Contains(out.String(), "serving\n") || !strings.Contains(out.String(), "SIGTERM: stopping") {
		t.Errorf("Output got %q", out.String())
	}
	if op.PprofAddr != "" || len(op.Addresses()) != 3 {
		t.Errorf("PprofAddr = %q, Addresses() = %v: want no pprof", op.PprofAddr, op.Addresses())
	}
}

func TestStartOperatorFails(t *testing.T) {
	tests := []struct {
		mode    string
		timeout time.Duration
		want    []string
	}{
		{"exit", 30 * time.Second, []string{"operator fake exited before it was ready: exit status 3", "giving up at once, as asked"}},
		{"never-ready", 2 * time.Second, []string{"operator fake not ready after 2s", "503 Service Unavailable", "not ready, as asked"}},
		// Ready, but its metrics port never listens: StartOperator must not hand it to a caller that scrapes.
		{"metrics-never", 3 * time.Second, []string{"operator fake not ready after 3s", "metrics port does not accept connections", "never serving metrics, as asked"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			o := fakeOptions(t, tt.mode)
			o.ReadyTimeout = tt.timeout
			op, err := StartOperator(t.Context(), o)
			if err == nil {
				_ = op.Stop()
				t.Fatal("StartOperator succeeded")
			}
			want := append(tt.want, filepath.Join(o.LogDir, "operator-fake.log"))
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			// It stopped what it started: no process has the test's kubeconfig in its arguments.
			procs, perr := ProcessesMentioning(o.Kubeconfig)
			if perr != nil {
				t.Fatal(perr)
			}
			if len(procs) > 0 {
				t.Errorf("still running after a failed start: %v", procs)
			}
		})
	}
}

func TestStartOperatorNoBinary(t *testing.T) {
	o := fakeOptions(t, "")
	o.Binary = filepath.Join(t.TempDir(), "platform-operator")
	if _, err := StartOperator(context.Background(), o); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("StartOperator of a missing binary: %v, want the ErrNoExecutable hint", err)
	}
}

func TestOperatorScrapeSecure(t *testing.T) {
	op := &Operator{secureMetrics: true, MetricsAddr: "127.0.0.1:1"}
	if _, err := op.Scrape(t.Context()); !errors.Is(err, ErrSecureMetrics) {
		t.Errorf("Scrape = %v, want ErrSecureMetrics", err)
	}
}

func TestOperatorArgs(t *testing.T) {
	const probe, metrics, pprof = "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"
	base := []string{"--kubeconfig=/k", "--health-probe-bind-address=" + probe, "--metrics-bind-address=" + metrics}
	tests := []struct {
		name  string
		o     OperatorOptions
		pprof string
		want  []string
	}{
		{"defaults", OperatorOptions{Kubeconfig: "/k"}, "",
			append(slices.Clone(base), "--metrics-secure=false", "--leader-elect=false")},
		{"pprof and extra args last", OperatorOptions{Kubeconfig: "/k", Args: []string{"--sync-period=1m"}}, pprof,
			append(slices.Clone(base), "--metrics-secure=false", "--pprof-bind-address="+pprof, "--leader-elect=false", "--sync-period=1m")},
		{"the process's own kubeconfig", OperatorOptions{Kubeconfig: "/admin", ProcessKubeconfig: "/k"}, "",
			append(slices.Clone(base), "--metrics-secure=false", "--leader-elect=false")},
		{"secure metrics", OperatorOptions{Kubeconfig: "/k", SecureMetrics: true}, "",
			append(slices.Clone(base), "--leader-elect=false")},
		{"leader election with the operator's timings", OperatorOptions{Kubeconfig: "/k", LeaderElection: &LeaderElection{Namespace: "ns"}}, "",
			append(slices.Clone(base), "--metrics-secure=false", "--leader-elect=true", "--leader-election-namespace=ns")},
		{"leader election with timings", OperatorOptions{Kubeconfig: "/k", LeaderElection: &LeaderElection{
			LeaseDuration: 8 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: time.Second}}, "",
			append(slices.Clone(base), "--metrics-secure=false", "--leader-elect=true",
				"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=5s", "--leader-elect-retry-period=1s")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := operatorArgs(tt.o, probe, metrics, tt.pprof); !slices.Equal(got, tt.want) {
				t.Errorf("operatorArgs =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestFilterEnv(t *testing.T) {
	env := []string{"PATH=/bin", "KUBECONFIG=/k", "RELATED_IMAGE_ERGO=a", "RELATED_IMAGE_X=b", "RELATED=c", "HOME=/h", "EMPTY="}
	tests := []struct {
		name string
		drop []string
		want []string
	}{
		{"nothing", nil, env},
		{"exact names", []string{"KUBECONFIG", "HOME", "EMPTY"}, []string{"PATH=/bin", "RELATED_IMAGE_ERGO=a", "RELATED_IMAGE_X=b", "RELATED=c"}},
		{"a name is not a prefix", []string{"RELATED"}, []string{"PATH=/bin", "KUBECONFIG=/k", "RELATED_IMAGE_ERGO=a", "RELATED_IMAGE_X=b", "HOME=/h", "EMPTY="}},
		{"a prefix", []string{"RELATED_IMAGE_*"}, []string{"PATH=/bin", "KUBECONFIG=/k", "RELATED=c", "HOME=/h", "EMPTY="}},
		{"the operator's", OperatorEnvDrop, []string{"PATH=/bin", "RELATED=c", "HOME=/h", "EMPTY="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FilterEnv(env, tt.drop...); !slices.Equal(got, tt.want) {
				t.Errorf("FilterEnv(%q) = %q, want %q", tt.drop, got, tt.want)
			}
		})
	}
}

func TestOperatorEnv(t *testing.T) {
	inherited := []string{"PATH=/bin", "WATCH_NAMESPACE=shell", "POD_NAMESPACE=shell", "RELATED_IMAGE_ERGO=shell", "GOFLAGS=-x", "KUBECONFIG=/k"}
	tests := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"nothing extra", nil, []string{"PATH=/bin", "GOFLAGS=-x"}},
		{"extra comes last", []string{"WATCH_NAMESPACE=ns", "RELATED_IMAGE_ERGO=img"},
			[]string{"PATH=/bin", "GOFLAGS=-x", "WATCH_NAMESPACE=ns", "RELATED_IMAGE_ERGO=img"}},
		{"extra replaces an inherited variable", []string{"GOFLAGS=-y"}, []string{"PATH=/bin", "GOFLAGS=-y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := operatorEnv(inherited, tt.extra); !slices.Equal(got, tt.want) {
				t.Errorf("operatorEnv(%q) = %q, want %q", tt.extra, got, tt.want)
			}
		})
	}
}

func TestTailFile(t *testing.T) {
	dir := t.TempDir()
	long := make([]string, 30000) // about 200 KiB: the tail spans more than one block read from the end
	for i := range long {
		long[i] = fmt.Sprintf("line %05d", i)
	}
	tests := []struct {
		name, content string
		n             int
		want          string
	}{
		{"fewer lines than asked", "a\nb\n", 5, "a\nb"},
		{"the last lines", "a\nb\nc\n", 2, "b\nc"},
		{"no final newline", "a\nb\nc", 2, "b\nc"},
		{"empty", "", 3, ""},
		{"long", strings.Join(long, "\n") + "\n", 3, "line 29997\nline 29998\nline 29999"},
		{"long, many lines", strings.Join(long, "\n") + "\n", 10000, strings.Join(long[20000:], "\n")},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprint(i))
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := TailFile(path, tt.n); got != tt.want {
				t.Errorf("TailFile(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
	if got := TailFile(filepath.Join(dir, "missing"), 3); !strings.Contains(got, "no such file") {
		t.Errorf("TailFile of a missing file = %q, want the error", got)
	}
}
