//go:build linux

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/platform-operator/platform-operator/internal/localcluster"
	"github.com/platform-operator/platform-operator/internal/promtext"
)

// ergoImage is what the suite sets RELATED_IMAGE_ERGO to; the Deployments must carry it. kwok never
// pulls it.
const ergoImage = "registry.example/ergochat/ergo:e2e"

// leaderElectionID is main.go's LeaderElectionID: the Lease's name.
const leaderElectionID = "platform-operator.josie.cloud"

// operatorConfig says how to run one operator process.
type operatorConfig struct {
	// namespace is WATCH_NAMESPACE and, with leader election, the Lease's namespace.
	namespace string
	// leaderElection turns --leader-elect on with these timings.
	leaderElection *leaseTimings
	// args are more flags.
	args []string
}

type leaseTimings struct {
	lease, renew, retry time.Duration
}

// operatorStopTimeout is how long Stop waits after SIGTERM (a clean shutdown, as kubelet does) before
// it sends SIGKILL and reports that the operator had to be killed.
const operatorStopTimeout = 15 * time.Second

// operator is one platform-operator process: the built binary, against the cluster's admin kubeconfig,
// with its health and (plain HTTP) metrics endpoints on free 127.0.0.1 ports. Kill sends it SIGKILL, as
// a node failure or the OOM killer would.
type operator struct {
	*localcluster.Child
	name        string
	probeAddr   string
	metricsAddr string
	logPath     string
}

var (
	operatorsMu sync.Mutex
	operators   []*operator
)

func allOperators() []*operator {
	operatorsMu.Lock()
	defer operatorsMu.Unlock()
	return append([]*operator(nil), operators...)
}

// startOperator starts an operator and waits for its /readyz. The spec's cleanup stops it and, when the
// spec failed, prints the end of its log.
func startOperator(name string, cfg operatorConfig) *operator {
	GinkgoHelper()
	t := time.Now()
	ports := freePorts(2)
	op := &operator{
		name:        name,
		probeAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		metricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
		logPath:     filepath.Join(logDir, "operator-"+name+".log"),
	}
	args := []string{
		"--kubeconfig=" + cluster.KubeconfigPath(),
		"--health-probe-bind-address=" + op.probeAddr,
		"--metrics-bind-address=" + op.metricsAddr,
		"--metrics-secure=false",
	}
	if le := cfg.leaderElection; le != nil {
		args = append(args,
			"--leader-elect=true",
			"--leader-election-namespace="+cfg.namespace,
			"--leader-elect-lease-duration="+le.lease.String(),
			"--leader-elect-renew-deadline="+le.renew.String(),
			"--leader-elect-retry-period="+le.retry.String(),
		)
	} else {
		args = append(args, "--leader-elect=false")
	}
	args = append(args, cfg.args...)

	env := []string{"RELATED_IMAGE_ERGO=" + ergoImage, "WATCH_NAMESPACE=" + cfg.namespace}
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		switch name {
		case "KUBECONFIG", "WATCH_NAMESPACE", "RELATED_IMAGE_ERGO", "POD_NAMESPACE":
		default:
			env = append(env, e)
		}
	}
	log, err := os.Create(op.logPath)
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(log, "# %s %s\n# WATCH_NAMESPACE=%s\n", operatorBin, strings.Join(args, " "), cfg.namespace)

	// In its own process group, with SIGKILL should this test process die without stopping it.
	op.Child, err = localcluster.StartChild("operator "+name, operatorBin, args, env, log)
	Expect(err).NotTo(HaveOccurred())
	operatorsMu.Lock()
	operators = append(operators, op)
	operatorsMu.Unlock()
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			op.printTail(40)
		}
		Expect(op.Stop(operatorStopTimeout)).To(Succeed())
	})

	Eventually(func() error {
		select {
		case <-op.Done():
			return StopTrying(fmt.Sprintf("operator %s exited: %v", name, op.Err()))
		default:
		}
		return op.get("/readyz", op.probeAddr, nil)
	}).WithTimeout(60*time.Second).Should(Succeed(), "operator %s never answered /readyz; log: %s", name, op.logPath)
	record("operator start: "+name, time.Since(t), fmt.Sprintf("(pid %d)", op.PID()))
	return op
}

func (o *operator) get(path, addr string, body *string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	if body != nil {
		*body = string(data)
	}
	return nil
}

// metric sums the samples of a metric whose labels contain every one of labels ("name=\"value\"").
// A metric the process has not registered or reported yet sums to 0.
func (o *operator) metric(name string, labels ...string) (float64, error) {
	var text string
	if err := o.get("/metrics", o.metricsAddr, &text); err != nil {
		return 0, err
	}
	samples, err := promtext.Parse(text)
	if err != nil {
		return 0, err
	}
	return samples.Sum(name, labels...), nil
}

// reconciles is how many ErgoNetwork reconciles this process ran.
func (o *operator) reconciles() (float64, error) {
	return o.metric("controller_runtime_reconcile_total", `controller="ergonetwork"`)
}

// leading tells whether this process holds the leader Lease, by its own account.
func (o *operator) leading() (bool, error) {
	v, err := o.metric("leader_election_master_status", `name="`+leaderElectionID+`"`)
	return v == 1, err
}

// checkGone proves the process has exited and its ports are closed.
func (o *operator) checkGone() error {
	select {
	case <-o.Done():
	default:
		return fmt.Errorf("operator %s (pid %d) is still running", o.name, o.PID())
	}
	if err := localcluster.CheckClosed(o.probeAddr, o.metricsAddr); err != nil {
		return fmt.Errorf("operator %s: %w", o.name, err)
	}
	return nil
}

func (o *operator) logContains(s string) bool {
	data, err := os.ReadFile(o.logPath)
	return err == nil && strings.Contains(string(data), s)
}

func (o *operator) printTail(n int) {
	data, err := os.ReadFile(o.logPath)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	fmt.Fprintf(GinkgoWriter, "--- last %d lines of %s:\n%s\n", n, o.logPath, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// freePorts returns n distinct free ports on 127.0.0.1.
func freePorts(n int) []int {
	GinkgoHelper()
	ports, err := localcluster.FreePorts(n)
	Expect(err).NotTo(HaveOccurred())
	return ports
}
