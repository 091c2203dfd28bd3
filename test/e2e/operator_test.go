//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/platform-operator/platform-operator/internal/localcluster"
	"github.com/platform-operator/platform-operator/internal/manager"
)

// ergoImage is what the suite sets RELATED_IMAGE_ERGO to; the Deployments must carry it. kwok never
// pulls it.
const ergoImage = "registry.example/ergochat/ergo:e2e"

// operatorConfig says how to run one operator process.
type operatorConfig struct {
	// namespace is WATCH_NAMESPACE and, with leader election, the Lease's namespace.
	namespace string
	// leaderElection turns --leader-elect on with these timings; its namespace defaults to namespace.
	leaderElection *localcluster.LeaderElection
	// args are more flags.
	args []string
	// secureMetrics serves /metrics as the Deployment does (HTTPS, authenticated and authorized through
	// the API server) instead of the plain HTTP the other scenarios scrape; see OperatorOptions.
	secureMetrics bool
	// pprof also serves /debug/pprof on a free port (--pprof-bind-address).
	pprof bool
}

// operatorStopTimeout is how long Stop waits after SIGTERM (a clean shutdown, as kubelet does) before
// it sends SIGKILL and reports that the operator had to be killed.
const operatorStopTimeout = 15 * time.Second

// operator is one platform-operator process: the built binary, against the cluster's admin kubeconfig.
// Kill sends it SIGKILL, as a node failure or the OOM killer would.
type operator struct {
	*localcluster.Operator
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

// startOperator starts an operator scoped to cfg.namespace and waits for its /readyz. The spec's cleanup
// stops it and, when the spec failed, prints the end of its log; AfterSuite proves it is gone.
func startOperator(name string, cfg operatorConfig) *operator {
	GinkgoHelper()
	var le *localcluster.LeaderElection
	if cfg.leaderElection != nil {
		c := *cfg.leaderElection
		if c.Namespace == "" {
			c.Namespace = cfg.namespace
		}
		le = &c
	}
	lo, err := localcluster.StartOperator(context.Background(), localcluster.OperatorOptions{
		Binary:         operatorBin,
		Kubeconfig:     cluster.KubeconfigPath(),
		Name:           name,
		LogDir:         logDir,
		Args:           cfg.args,
		Env:            []string{"RELATED_IMAGE_ERGO=" + ergoImage, "WATCH_NAMESPACE=" + cfg.namespace},
		LeaderElection: le,
		SecureMetrics:  cfg.secureMetrics,
		Pprof:          cfg.pprof,
		StopTimeout:    operatorStopTimeout,
		// The API server calls this process's admission webhooks (in its namespace) from the moment it is
		// ready until it stops (docs/webhooks.md).
		WebhookManifests: filepath.Join(repoRoot, "config", "webhook", "manifests.yaml"),
	})
	Expect(err).NotTo(HaveOccurred(), "start operator %s", name)
	op := &operator{lo}
	operatorsMu.Lock()
	operators = append(operators, op)
	operatorsMu.Unlock()
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			fmt.Fprintf(GinkgoWriter, "--- last 40 lines of %s:\n%s\n", op.LogPath, op.Tail(40))
		}
		Expect(op.Stop()).To(Succeed())
	})
	record("operator start: "+name, op.ReadyAfter, fmt.Sprintf("(pid %d)", op.PID()))
	return op
}

// metric sums the samples of a metric whose labels include labels. A metric the process has not
// registered or reported yet sums to 0.
func (o *operator) metric(name string, labels map[string]string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := o.Scrape(ctx)
	if err != nil {
		return 0, err
	}
	return m.Sum(name, labels), nil
}

// reconciles is how many ErgoNetwork reconciles this process ran.
func (o *operator) reconciles() (float64, error) {
	return o.metric("controller_runtime_reconcile_total", map[string]string{"controller": "ergonetwork"})
}

// leading tells whether this process holds the leader Lease, by its own account.
func (o *operator) leading() (bool, error) {
	v, err := o.metric("leader_election_master_status", map[string]string{"name": manager.LeaderElectionID})
	return v == 1, err
}

func (o *operator) logContains(s string) bool {
	data, err := os.ReadFile(o.LogPath)
	return err == nil && strings.Contains(string(data), s)
}
