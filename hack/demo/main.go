// Command demo is `make demo`: it starts the local cluster (internal/testutil/localcluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok), runs the operator as its real binary against it,
// then plays every registered scenario (one per API: scenario.go, irc.go, ...): it applies the API's
// samples, follows them to Ready (playing the controllers the local cluster lacks, such as cert-manager),
// shows what the operator made of them, and keeps everything running until Ctrl-C so you can look around
// with kubectl.
//
//	go run ./hack/demo [-only irc,...] [-operator bin/platform-operator] [-operator-log FILE|-] [-exit-after 20s] [-skip-operator]
//
// docs/demo.md describes what it prints and how to look around.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

const (
	namespace    = "default"
	fieldManager = "platform-operator-demo"
	// csvNamespace is where -as-csv installs the operator's ServiceAccount, as config/default does.
	csvNamespace = "platform-operator-system"
	// envExitAfter is -exit-after for runs without flags (CI has no terminal to press Ctrl-C in).
	envExitAfter = "DEMO_EXIT_AFTER"
	// demoOperatorImage is the operator's image as the demo's operator knows it (RELATED_IMAGE_OPERATOR).
	demoOperatorImage = "localhost/platform-operator:demo"
	// operatorStopTimeout is how long the operator gets to stop after SIGTERM before it is killed.
	operatorStopTimeout = 15 * time.Second
)

type options struct {
	root         string
	operator     string
	operatorLog  string
	logDir       string // the cluster's logs go to <logDir>/cluster
	skipOperator bool
	asCSV        bool
	exitAfter    time.Duration
	wait         time.Duration
	scenarios    []Scenario
	out          io.Writer
}

func main() {
	root, err := testutil.FindRepoRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err, "(run it from inside the repository)")
		os.Exit(2)
	}
	if err := checkScenarios(registry); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	o := options{root: root, logDir: filepath.Join(root, "bin", "demo"), out: os.Stdout}
	var only string
	flag.StringVar(&only, "only", "",
		"comma-separated scenarios to play (default: all of them): "+strings.Join(names(registry), ", "))
	flag.StringVar(&o.operator, "operator", filepath.Join(root, "bin", "platform-operator"),
		"operator binary to run; built with `go build` when missing (make demo builds it first)")
	flag.StringVar(&o.operatorLog, "operator-log", filepath.Join(o.logDir, "operator.log"),
		`file the operator's output goes to; "-" prints it here, each line prefixed with "operator |"`)
	flag.BoolVar(&o.skipOperator, "skip-operator", false, "do not run the operator: only the cluster and the samples")
	flag.BoolVar(&o.asCSV, "as-csv", false, "run the operator as its bundle CSV's ServiceAccount in "+csvNamespace+
		", with exactly the permissions the CSV grants for all namespaces (as the e2e suite does), instead of as the admin")
	flag.DurationVar(&o.exitAfter, "exit-after", 0,
		"stop by itself this long after the demo is up instead of waiting for Ctrl-C (env "+envExitAfter+")")
	flag.DurationVar(&o.wait, "wait", 60*time.Second, "how long each wait for the operator (reconciled, Available, Ready) may take")
	flag.Parse()
	if o.scenarios, err = selectScenarios(registry, only); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	if o.exitAfter == 0 {
		if v := os.Getenv(envExitAfter); v != "" {
			if o.exitAfter, err = time.ParseDuration(v); err != nil {
				fmt.Fprintf(os.Stderr, "demo: %s=%q: %v\n", envExitAfter, v, err)
				os.Exit(2)
			}
		}
	}
	os.Exit(run(o))
}

// run returns the exit code: 0 when everything came up and shut down cleanly, leaving nothing running.
func run(o options) (code int) {
	out := &syncWriter{w: o.out}
	p := Printer{w: out}

	// The first SIGINT/SIGTERM starts a clean shutdown; later ones are only acknowledged, because
	// dying half way would leave etcd and kube-apiserver running in their own process groups.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		first := true
		for s := range signals {
			if first {
				first = false
				fmt.Fprintf(out, "\n%s received: stopping.\n", s)
				cancel(fmt.Errorf("%s", s))
				continue
			}
			fmt.Fprintf(out, "%s received again: still stopping, please wait (at most about a minute).\n", s)
		}
	}()

	failed := false
	fail := func(format string, args ...any) {
		failed = true
		p.Printf("ERROR: "+format, args...)
	}

	var op *localcluster.Operator // nil with -skip-operator or until it runs
	clusterLogs := filepath.Join(o.logDir, "cluster")
	p.Step("Starting the local cluster (Kubernetes %s from %s): etcd, kube-apiserver, kube-controller-manager, "+
		"kube-scheduler and kwok with one fake node", localcluster.KubernetesVersion, rel(o.root, assetsDir(o.root)))
	p.Printf("their logs go to %s/", rel(o.root, clusterLogs))
	start := time.Now()
	_ = os.RemoveAll(clusterLogs)
	cluster := localcluster.New(localcluster.WithWorkloads(localcluster.Options{
		RepoRoot: o.root,
		LogDir:   clusterLogs,
		Progress: func(phase string, took time.Duration) { p.Printf("%-34s %6s", phase, secs(took)) },
	}))
	defer func() {
		t := time.Now()
		if err := cluster.Stop(); err != nil {
			fail("stopping the cluster: %v", err)
		} else if cluster.Dir() != "" {
			p.Printf("cluster stopped in %s, %s removed", secs(time.Since(t)), cluster.Dir())
		}
		err, ports := cluster.CheckStopped(), len(cluster.Addresses())
		if op != nil {
			err, ports = errors.Join(err, op.CheckStopped()), ports+len(op.Addresses())
		}
		if err != nil {
			fail("left behind: %v", err)
		} else if cluster.Dir() != "" {
			p.Printf("nothing left behind: no process of the cluster or the operator runs, none of their %d ports is open",
				ports)
		}
		if failed {
			fmt.Fprintln(out, "demo: finished with errors (see ERROR above)")
			code = 1
		}
	}()
	if err := cluster.Start(ctx); err != nil {
		fail("%v", err)
		return 1
	}
	p.Printf("%-34s %6s   (API server %s)", "ready", secs(time.Since(start)), cluster.APIServerURL())

	operatorArgs, stopBeside, err := startBeside(ctx, p, o.scenarios)
	// Stopped after the operator: the deferred op.Stop below runs first.
	defer stopBeside()
	if err != nil {
		fail("%v", err)
		return 1
	}

	if o.skipOperator {
		p.Step("Not starting the operator (-skip-operator): nothing will reconcile the samples")
	} else {
		if op, err = startOperator(ctx, p, o, cluster.KubeconfigPath(), operatorArgs); err != nil {
			fail("%v", err) // with the end of the operator's log
			return 1
		}
		// A no-op once the demo stopped it itself; this one covers the early returns.
		defer func() { _ = op.Stop() }()
	}

	e := &Env{
		Printer: p, Client: cluster.Client(), Root: o.root, Namespace: namespace, Timeout: o.wait,
		FieldManager: fieldManager, OperatorBinary: o.operator,
		fail: func(err error) {
			fail("%v", err)
			if op != nil && op.LogPath != "" && ctx.Err() == nil { // not for a Ctrl-C
				p.Printf("last lines of %s:", op.LogPath)
				for l := range strings.Lines(op.Tail(20)) {
					p.Printf("operator | %s", strings.TrimSuffix(l, "\n"))
				}
			}
		},
	}
	if op != nil {
		e.operator = op
	}
	var results []result
	for i, s := range o.scenarios {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(out, "\n\n######## Scenario %d of %d, %s: %s\n", i+1, len(o.scenarios), s.Name, s.Title)
		if op != nil {
			p.Printf("(each wait for the operator: up to %s, -wait)", o.wait)
		}
		results = append(results, e.run(ctx, s))
	}
	summary(p, results, op != nil)
	if op != nil && ctx.Err() == nil {
		if err := printOperatorMetrics(ctx, p, op); err != nil {
			fail("%v", err)
		}
	}

	p.Step("The demo cluster is running")
	p.Printf("export KUBECONFIG=%s", cluster.KubeconfigPath())
	kubectl := cluster.BinaryPath("kubectl")
	var hints []string
	for i, r := range results {
		if s := o.scenarios[i]; s.Kubectl != nil && r.obj != nil {
			hints = append(hints, s.Kubectl(r.obj)...)
		}
	}
	hints = append(hints, "get nodes,pv")
	if isFile(kubectl) {
		for _, h := range hints {
			p.Printf("%s %s", rel(o.root, kubectl), h)
		}
	} else {
		for _, h := range hints {
			p.Printf("kubectl %s", h)
		}
		p.Printf("(any kubectl works; `make controlplane-full` builds one into %s)", rel(o.root, assetsDir(o.root)))
	}
	if op != nil && op.LogPath != "" {
		p.Printf("operator log: %s", rel(o.root, op.LogPath))
	}

	var exited <-chan struct{}
	if op != nil {
		exited = op.Done()
	}
	var timeout <-chan time.Time
	if o.exitAfter > 0 {
		p.Printf("stopping by itself in %s (-exit-after); Ctrl-C stops it sooner", o.exitAfter)
		timeout = time.After(o.exitAfter)
	} else {
		p.Printf("press Ctrl-C to stop the operator and the cluster (or: kill -TERM %d)", os.Getpid())
	}
	select {
	case <-ctx.Done():
	case <-timeout:
		fmt.Fprintf(out, "\n%s passed (-exit-after): stopping.\n", o.exitAfter)
	case <-exited:
		e.fail(e.errOperatorExited())
	}

	p.Step("Stopping")
	if op != nil {
		t := time.Now()
		if err := op.Stop(); err != nil {
			fail("stopping the operator: %v", err)
		} else {
			p.Printf("operator stopped in %s", secs(time.Since(t)))
		}
	}
	// The deferred cluster.Stop runs next and turns any failure into exit status 1.
	return 0
}

// summary prints one line per scenario played: what it followed, what Ready said, and when.
func summary(p Printer, results []result, operatorRan bool) {
	if len(results) == 0 {
		return
	}
	p.Step("Summary")
	var rows [][]string
	for _, r := range results {
		after := "-"
		switch {
		case r.err != nil:
			after = "failed (see ERROR above)"
		case r.ready > 0:
			after = secs(r.ready) + " after the apply"
		case !operatorRan:
			after = "no operator ran"
		}
		rows = append(rows, []string{r.name, cmp.Or(r.object, "-"), cmp.Or(r.state, "-"), after})
	}
	p.Table([]string{"SCENARIO", "OBJECT", "STATE", "READY"}, rows)
}

// startBeside calls the Operator hook of every scenario that has one, each with a new directory of its
// own, and returns the operator flags they need and a func that stops what they started (in the
// reverse order) and removes their directories. After an error, what started is stopped too.
func startBeside(ctx context.Context, p Printer, scenarios []Scenario) (args []string, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
		stops = nil
	}
	for _, s := range scenarios {
		if s.Operator == nil {
			continue
		}
		dir, err := os.MkdirTemp("", "platform-operator-demo-"+s.Name+"-")
		if err != nil {
			stop()
			return nil, func() {}, err
		}
		stops = append(stops, func() { _ = os.RemoveAll(dir) })
		p.Step("Starting what scenario %s runs beside the cluster (in %s)", s.Name, dir)
		a, st, err := s.Operator(ctx, dir)
		if st != nil {
			stops = append(stops, st)
		}
		if err != nil {
			stop()
			return nil, func() {}, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		if len(a) > 0 {
			p.Printf("operator flags it needs: %s", strings.Join(a, " "))
		}
		args = append(args, a...)
	}
	return args, stop, nil
}

// startOperator builds the operator when the default binary is missing, then starts it against the
// cluster with localcluster.StartOperator, with the console log and extra flags, and waits for /readyz.
func startOperator(ctx context.Context, p Printer, o options, kubeconfig string, extra []string) (*localcluster.Operator, error) {
	bin := o.operator
	if !isFile(bin) {
		if bin != filepath.Join(o.root, "bin", "platform-operator") {
			return nil, fmt.Errorf("operator binary %s does not exist", bin)
		}
		p.Step("Building the operator: go build -o %s . (make build does the same)", rel(o.root, bin))
		t := time.Now()
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		build.Dir, build.Stdout, build.Stderr = o.root, p.w, p.w
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build the operator (try make build): %w", err)
		}
		p.Printf("built in %s", secs(time.Since(t)))
	}

	opts := localcluster.OperatorOptions{
		Binary:     bin,
		Kubeconfig: kubeconfig,
		// A log meant for people, not for a log pipeline; then what the scenarios' Operator hooks need.
		Args:        append([]string{"--zap-encoder=console"}, extra...),
		StopTimeout: operatorStopTimeout,
		// The operator's own image, which its backup and restore Jobs name: no kubelet here pulls it, the
		// demo runs those Jobs' commands on this machine with the binary above (backup.go).
		Env: []string{"RELATED_IMAGE_OPERATOR=" + demoOperatorImage},
		// The admission webhooks, called by the API server as in a deployed operator (docs/webhooks.md).
		WebhookManifests: filepath.Join(o.root, "config", "webhook", "manifests.yaml"),
	}
	if !o.asCSV {
		// What config/default (make deploy) installs beside the operator's own role and the bundle ships:
		// the ClusterRole the operator binds to each environment namespace's tenant ServiceAccount. -as-csv
		// installs it with the bundle's RBAC.
		// The file's name is config/default's before its namePrefix, which gives the operator's default.
		rename := func(u *unstructured.Unstructured) { u.SetName(catalyst.DefaultTenantClusterRole) }
		if err := applyFile(ctx, kubeconfig, filepath.Join(o.root, "config", "rbac", "catalyst_tenant_role.yaml"), rename); err != nil {
			return nil, fmt.Errorf("install the Catalyst tenant ClusterRole: %w", err)
		}
	}
	if o.asCSV {
		csv, err := localcluster.FindCSV(o.root)
		if err != nil {
			return nil, err
		}
		admin, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(o.logDir, 0o755); err != nil {
			return nil, err
		}
		id, err := localcluster.InstallCSVRBAC(ctx, admin, localcluster.CSVInstall{
			CSVPath: csv, Namespace: csvNamespace, KubeconfigPath: filepath.Join(o.logDir, "operator.kubeconfig"),
		})
		if err != nil {
			return nil, fmt.Errorf("-as-csv: %w", err)
		}
		opts.ProcessKubeconfig = id.Kubeconfig
		p.Printf("-as-csv: the operator runs as %s with the permissions of %s (all namespaces)", id.Username, rel(o.root, csv))
	}
	p.Step("Starting the operator: %s", rel(o.root, bin))
	if o.operatorLog == "-" {
		opts.Output = &prefixWriter{w: p.w, prefix: "    operator | "}
	} else {
		opts.LogPath = o.operatorLog
		p.Printf("its log goes to %s (-operator-log - prints it here)", rel(o.root, o.operatorLog))
	}
	op, err := localcluster.StartOperator(ctx, opts)
	if err != nil {
		return nil, err
	}
	p.Printf("command line: %s %s", rel(o.root, bin), strings.Join(op.Args, " "))
	p.Printf("ready (pid %d, http://%s/readyz answered) after %s; metrics at http://%s/metrics",
		op.PID(), op.ProbeAddr, secs(op.ReadyAfter), op.MetricsAddr)
	p.Printf("admission webhooks at https://%s, called by the API server through %d webhook configuration(s)",
		op.WebhookAddr, len(op.Webhooks))
	return op, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func assetsDir(root string) string {
	if v := os.Getenv(localcluster.AssetsEnv); v != "" {
		return v
	}
	return localcluster.DefaultAssetsDirectory(root)
}

// rel shortens paths inside the repository for printing.
func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
