//go:build linux

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// ergoImage is what the suite sets RELATED_IMAGE_ERGO to; the Deployments must carry it. kwok never
// pulls it.
const ergoImage = "registry.example/ergochat/ergo:e2e"

// clusterOperatorNamespace is where the operators for the whole cluster (an empty operatorConfig.namespace,
// OLM's AllNamespaces) run: their ServiceAccount and its Roles are there, as config/default installs the
// operator there.
const clusterOperatorNamespace = "platform-operator-system"

// operatorConfig says how to run one operator process.
type operatorConfig struct {
	// namespace is WATCH_NAMESPACE. The operator runs in it (OLM's OwnNamespace: its ServiceAccount, its
	// Roles and, with leader election, its Lease are there); empty runs it for the whole cluster, in
	// clusterOperatorNamespace.
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
	// csv is the ClusterServiceVersion whose permissions the operator gets; empty: the bundle's
	// (csvPath). Only the permissions scenario's control gives another.
	csv string
	// refusalsExpected leaves out the cleanup's check that the API server refused the operator nothing:
	// for the control that runs it with a permission taken out of its CSV.
	refusalsExpected bool
}

// operatorStopTimeout is how long Stop waits after SIGTERM (a clean shutdown, as kubelet does) before
// it sends SIGKILL and reports that the operator had to be killed.
const operatorStopTimeout = 15 * time.Second

// operator is one platform-operator process: the built binary, authenticated as the ServiceAccount of the
// bundle's CSV with exactly the permissions the CSV grants (identity). Kill sends it SIGKILL, as a node
// failure or the OOM killer would.
type operator struct {
	*localcluster.Operator
	identity *localcluster.CSVIdentity
}

// operatorNamespace is the namespace the operator runs in (operatorConfig.namespace).
func (cfg operatorConfig) operatorNamespace() string {
	if cfg.namespace == "" {
		return clusterOperatorNamespace
	}
	return cfg.namespace
}

// installCSVRBAC grants the operator of cfg what OLM would grant it, installed with cfg's install mode,
// from the bundle's CSV as it is now (other changes to the RBAC markers reach the suite once `make
// bundle` ran), and returns its identity, whose kubeconfig is written into the log directory. What it
// creates stays until the cluster stops: operators of one namespace share it, and a second install
// only updates it.
func installCSVRBAC(name string, cfg operatorConfig) *localcluster.CSVIdentity {
	GinkgoHelper()
	var targets []string
	if cfg.namespace != "" {
		targets = []string{cfg.namespace}
	}
	csv := cfg.csv
	if csv == "" {
		csv = csvPath
	}
	ctx, cancel := suiteContext()
	defer cancel()
	id, err := localcluster.InstallCSVRBAC(ctx, cluster.Config(), localcluster.CSVInstall{
		CSVPath:          csv,
		Namespace:        cfg.operatorNamespace(),
		TargetNamespaces: targets,
		KubeconfigPath:   filepath.Join(logDir, "operator-"+name+".kubeconfig"),
	})
	Expect(err).NotTo(HaveOccurred(), "grant operator %s the permissions of %s", name, csv)
	return id
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

// startOperator starts an operator scoped to cfg.namespace, as its CSV's ServiceAccount (installCSVRBAC),
// and waits for its /readyz. The spec's cleanup stops it, prints the end of its log when the spec failed,
// and fails the spec if the API server refused the operator anything (a permission missing from the
// CSV); AfterSuite proves it is gone.
func startOperator(name string, cfg operatorConfig) *operator {
	GinkgoHelper()
	var le *localcluster.LeaderElection
	if cfg.leaderElection != nil {
		c := *cfg.leaderElection
		if c.Namespace == "" {
			c.Namespace = cfg.operatorNamespace()
		}
		le = &c
	}
	id := installCSVRBAC(name, cfg)
	lo, err := localcluster.StartOperator(context.Background(), localcluster.OperatorOptions{
		Binary: operatorBin,
		// The suite's admin installs the webhook configurations (as OLM does); the process runs as the
		// CSV's ServiceAccount.
		Kubeconfig:        cluster.KubeconfigPath(),
		ProcessKubeconfig: id.Kubeconfig,
		Name:              name,
		LogDir:            logDir,
		Args:              cfg.args,
		Env:               []string{"RELATED_IMAGE_ERGO=" + ergoImage, "WATCH_NAMESPACE=" + cfg.namespace},
		LeaderElection:    le,
		SecureMetrics:     cfg.secureMetrics,
		Pprof:             cfg.pprof,
		StopTimeout:       operatorStopTimeout,
		// The API server calls this process's admission webhooks (in its namespace) from the moment it is
		// ready until it stops (docs/webhooks.md).
		WebhookManifests: filepath.Join(repoRoot, "config", "webhook", "manifests.yaml"),
	})
	Expect(err).NotTo(HaveOccurred(), "start operator %s", name)
	op := &operator{Operator: lo, identity: id}
	operatorsMu.Lock()
	operators = append(operators, op)
	operatorsMu.Unlock()
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			fmt.Fprintf(GinkgoWriter, "--- last 40 lines of %s:\n%s\n", op.LogPath, op.Tail(40))
		}
		Expect(op.Stop()).To(Succeed())
		if cfg.refusalsExpected {
			return
		}
		Expect(op.forbidden()).To(BeEmpty(), "the API server refused operator %s (%s) these requests: "+
			"the CSV %s lacks a permission the operator uses (fix its +kubebuilder:rbac markers, then make manifests bundle)",
			name, id.Username, cmp.Or(cfg.csv, csvPath))
	})
	timings.Record("operator start: "+name, op.ReadyAfter, fmt.Sprintf("(pid %d)", op.PID()))
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

// forbidden are the lines of the operator's log that report a request the API server refused its
// ServiceAccount for lack of permission.
func (o *operator) forbidden() []string {
	data, err := os.ReadFile(o.LogPath)
	Expect(err).NotTo(HaveOccurred())
	return localcluster.Forbidden(string(data), o.identity.Username)
}

func (o *operator) logContains(s string) bool {
	data, err := os.ReadFile(o.LogPath)
	return err == nil && strings.Contains(string(data), s)
}
