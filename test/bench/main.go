// Command bench measures the operator against the API server's own limit on the local control plane:
// convergence against a tight client's floor, writes per object, steady state and restart, memory, and
// latency under churn. `make bench` runs it and splices the figures into docs/performance.md.
//
// The harness (harness.go, tracker.go, load.go, operator.go, report.go) is the same for every API; each
// API adds one workload file (irc.go for ErgoNetwork) that says what its objects are, what the least work
// to converge them is, and how a watch tells they converged (workload.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// defaultSweep is what the tuning sweep compares with the defaults (docs/performance.md says why):
// operator flag sets separated by ";".
const defaultSweep = "--max-concurrent-reconciles=4;--max-concurrent-reconciles=16;" +
	"--kube-api-qps=200 --kube-api-burst=400;--kube-api-qps=1000 --kube-api-burst=2000"

// parseSweep turns "flags;flags" into sweep cases named by their flags.
func parseSweep(s string) []sweepCase {
	var out []sweepCase
	for _, set := range strings.Split(s, ";") {
		if args := strings.Fields(set); len(args) > 0 {
			out = append(out, sweepCase{Name: "`" + strings.Join(args, " ") + "`", Args: args})
		}
	}
	return out
}

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	root, err := testutil.FindRepoRoot(".")
	if err != nil {
		return err
	}
	// envtest and the caches log through controller-runtime; the bench reports its own progress.
	ctrllog.SetLogger(logr.Discard())
	c := &config{RepoRoot: root, Progress: os.Stderr}
	var sizes, memSizes, operatorArgs, out, names string
	var sweep string
	flag.StringVar(&names, "workloads", "all", "Workloads to measure, separated by commas, or all: "+strings.Join(workloadNames(workloads), ", ")+".")
	flag.StringVar(&c.Operator, "operator", filepath.Join(root, "bin", "platform-operator"), "The operator binary (make build).")
	flag.StringVar(&operatorArgs, "operator-args", "", "Extra operator flags for every run, space-separated.")
	flag.StringVar(&c.LogDir, "log-dir", filepath.Join(root, "bin", "bench-logs"), "Where the control planes' and operators' logs go.")
	flag.StringVar(&sizes, "sizes", "100,500,1000", "Convergence: numbers of objects created at once.")
	flag.StringVar(&memSizes, "memory-sizes", "0,1000,5000", "Memory: numbers of objects at which the operator is measured.")
	flag.IntVar(&c.Unrelated, "unrelated", 5000, "Memory: unrelated ConfigMaps, Secrets and Deployments (each) in other namespaces.")
	flag.IntVar(&c.Clients, "clients", 32, "Concurrent requests of the bench's own client (creates and the floor).")
	flag.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "Longest wait for one convergence.")
	flag.DurationVar(&c.SteadyWindow, "steady-window", 30*time.Second, "How long the steady state after convergence is watched.")
	flag.Float64Var(&c.ChurnRate, "churn-rate", 10, "Spec edits per second under churn.")
	flag.DurationVar(&c.ChurnDuration, "churn-duration", 30*time.Second, "How long the churn lasts.")
	flag.StringVar(&sweep, "sweep", defaultSweep, "Operator flag sets, separated by \";\", whose convergence is compared with the defaults' (empty: none).")
	flag.IntVar(&c.SweepSize, "sweep-size", 1000, "Objects in each sweep run.")
	flag.DurationVar(&c.CPUProfile, "cpu-profile", 20*time.Second, "How long the operator's CPU is profiled from the first create of each "+
		"convergence run, into cpu-<N>.pb.gz in the log directory (at most 5 s of the restart's resync); 0: none. The operator's "+
		"shutdown waits for a profile under way.")
	flag.StringVar(&out, "out", filepath.Join(root, "docs", "performance.md"), "The document to splice the figures into; empty prints only.")
	flag.Parse()

	names, withFleet := takeFleet(names) // the fleet is not a Workload (fleet.go)
	if names != "" {
		c.Workloads, err = selectWorkloads(names, workloads)
	}
	if err != nil {
		return fmt.Errorf("-workloads: %w", err)
	}
	if err := checkOut(out, c.Workloads, workloads); err != nil {
		return err
	}
	if c.Sizes, err = parseInts(sizes); err != nil {
		return fmt.Errorf("-sizes: %w", err)
	}
	if c.MemorySizes, err = parseInts(memSizes); err != nil {
		return fmt.Errorf("-memory-sizes: %w", err)
	}
	if len(c.Sizes) == 0 {
		return fmt.Errorf("-sizes: at least one size")
	}
	c.Args = strings.Fields(operatorArgs)
	c.Sweep = parseSweep(sweep)
	for _, sc := range c.Sweep {
		for _, a := range sc.Args {
			if !strings.HasPrefix(a, "-") {
				return fmt.Errorf("-sweep: %q is not an operator flag (flag sets separated by \";\", or empty for no sweep)", a)
			}
		}
	}
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, c)
	if err == nil && withFleet {
		err = fleetMain(ctx, c, rep)
	}
	if err != nil {
		return fmt.Errorf("%w (logs in %s)", err, c.LogDir)
	}
	section := render(c, rep)
	fmt.Print(section)
	if out == "" {
		return nil
	}
	doc, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := writeFile(out, []byte(splice(string(doc), section))); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: figures written into %s\n", out)
	return nil
}

// checkOut refuses to write the document from a run that left a workload out: its figures share one
// generated block, which the run would replace with fewer workloads' figures.
func checkOut(out string, selected []Workload, known map[string]Workload) error {
	if out == "" || len(selected) == len(known) {
		return nil
	}
	var left []string
	for _, name := range workloadNames(known) {
		if !slices.ContainsFunc(selected, func(w Workload) bool { return w.Info().Name == name }) {
			left = append(left, name)
		}
	}
	return fmt.Errorf("-workloads leaves out %s, whose figures in %s would be lost: measure every workload, or add -out= to print only",
		strings.Join(left, ", "), out)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}
