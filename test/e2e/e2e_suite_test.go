//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// The suite runs serially against one cluster. Every scenario works in namespaces of its own and runs
// operators of its own, scoped to its namespace with WATCH_NAMESPACE (as OLM installs it for one
// namespace), so a scenario can run alone (docs/e2e.md) and none sees another's networks.
var (
	repoRoot    string
	operatorBin string
	csvPath     string // the bundle's ClusterServiceVersion: the operators' permissions
	logDir      string // every process's log; kept when the suite fails
	cluster     *localcluster.Cluster
	k8s         client.Client // direct: no cache between the test and the API server

	// timings prints each phase's duration as it ends and all of them again when the suite ends.
	timings = &testutil.Timings{Suite: "e2e"}
	suiteT0 time.Time
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "platform-operator end to end")
}

func init() {
	// Not testenv's default (30 s, Consistently 2 s): here the operator binary reconciles on a local cluster
	// whose kube-controller-manager, scheduler and kwok act too (rollouts, garbage collection), each on its
	// own sync delay, so a spec waits longer and watches longer for a late write.
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
}

var _ = BeforeSuite(func(ctx SpecContext) {
	suiteT0 = time.Now()
	var err error
	repoRoot, err = testutil.FindRepoRoot(".")
	Expect(err).NotTo(HaveOccurred())
	operatorBin = operatorBinary()
	csvPath, err = localcluster.FindCSV(repoRoot)
	Expect(err).NotTo(HaveOccurred())
	logDir, err = os.MkdirTemp("", "platform-operator-e2e-")
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(os.Stdout, "e2e: operator binary %s, logs in %s\n", operatorBin, logDir)

	t := time.Now()
	cluster = localcluster.New(localcluster.WithWorkloads(localcluster.Options{
		RepoRoot: repoRoot,
		LogDir:   filepath.Join(logDir, "cluster"),
		Progress: func(phase string, took time.Duration) { timings.Record("cluster start: "+phase, took, "") },
	}))
	Expect(cluster.Start(ctx)).To(Succeed(), "start the local cluster; its logs are in %s", filepath.Join(logDir, "cluster"))
	timings.Record("cluster start (total)", time.Since(t), cluster.APIServerURL().String())
	k8s = cluster.Client()
	startCatalystServers() // the catalyst scenarios' registry and Git server, in this process
}, NodeTimeout(5*time.Minute))

var _ = ReportAfterEach(func(r SpecReport) {
	if r.LeafNodeType != types.NodeTypeIt || r.State.Is(types.SpecStateSkipped) {
		return
	}
	timings.Record("scenario: "+scenarioName(r.LeafNodeText), r.RunTime, r.State.String())
})

// AfterSuite stops every operator and the cluster, then proves nothing is left: no process the suite
// started (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, platform-operator) is
// alive, and none of their ports accepts connections.
var _ = AfterSuite(func() {
	var errs []error
	t := time.Now()
	for _, op := range allOperators() {
		if err := op.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	timings.Record("operators stop", time.Since(t), "")
	stopCatalystServers() // after the operators, which fetch from them

	if cluster != nil {
		took, err := cluster.StopAndCheck()
		timings.Record("cluster stop", took, "")
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, op := range allOperators() {
		if err := op.CheckStopped(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		fmt.Fprintf(os.Stdout, "e2e: no process or port left behind (checked %d operator processes and the cluster's %d addresses)\n",
			len(allOperators()), len(clusterAddresses()))
	}
	timings.Record("suite (total)", time.Since(suiteT0), "")
	timings.Print()
	Expect(errors.Join(errs...)).NotTo(HaveOccurred())
})

// ReportAfterSuite keeps the logs of a failed run and removes those of a passing one.
var _ = ReportAfterSuite("logs", func(r Report) {
	testutil.KeepLogsOfFailure(os.Stdout, "e2e", logDir, r.SuiteSucceeded)
})

func clusterAddresses() []string {
	if cluster == nil {
		return nil
	}
	return cluster.Addresses()
}

// scenarioName is the part of a spec's text before the colon: "smoke", "deletion", ...
func scenarioName(text string) string {
	name, _, _ := strings.Cut(text, ":")
	return name
}

// operatorBinary is $OPERATOR_BINARY or bin/platform-operator: the binary `make build` makes the way the
// Dockerfile does (CGO_ENABLED=0, -trimpath).
func operatorBinary() string {
	bin := os.Getenv("OPERATOR_BINARY")
	if bin == "" {
		bin = filepath.Join(repoRoot, "bin", "platform-operator")
	}
	fi, err := os.Stat(bin)
	if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		Fail(fmt.Sprintf("the e2e suite runs the operator binary %s, which does not exist or is not executable: "+
			"run `make build` (or `make test-e2e`, which builds it), or set OPERATOR_BINARY", bin))
	}
	return bin
}

// suiteContext is for cleanups, which run after their spec's context has ended.
func suiteContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}
