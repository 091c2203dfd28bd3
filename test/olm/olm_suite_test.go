//go:build linux

package olm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// enableEnv must be 1 for the suite to run (`make test-olm` sets it): it needs OLM's binaries and opm.
const enableEnv = "PLATFORM_OPERATOR_OLM_E2E"

// OLM's pin (hack/tools/olm/go.mod) and opm's (hack/tools/opm/go.mod); the Makefile names the binaries so.
const (
	olmModule = "github.com/operator-framework/operator-lifecycle-manager"
	opmModule = "github.com/operator-framework/operator-registry"
)

var (
	repoRoot    string
	logDir      string // every process's log; kept when the suite fails
	workDir     string // catalogs, caches, kubeconfigs
	cluster     *localcluster.Cluster
	k8s         client.Client
	olmBin      string // directory holding olm and catalog
	opmBin      string
	operatorBin string
	previous    release // the release the upgrade starts from

	// timings prints each phase's duration as it ends and all of them again when the suite ends.
	timings = &testutil.Timings{Suite: "olm"}
	suiteT0 time.Time
)

// phase runs f and records how long it took.
func phase(name string, f func()) {
	GinkgoHelper()
	By(name)
	t := time.Now()
	defer func() { timings.Record(name, time.Since(t), "") }()
	f()
}

func TestOLM(t *testing.T) {
	if os.Getenv(enableEnv) != "1" {
		t.Skipf("set %s=1 (make test-olm) to install and upgrade the operator through OLM", enableEnv)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "platform-operator OLM install and upgrade")
}

func init() {
	// Longer than testenv's (30 s) and the e2e suite's (60 s) defaults: a spec here waits on OLM's chain
	// (catalog, Subscription, InstallPlan, CSV, the operator's Deployment), each step taken by OLM's
	// operators on their own resync, before the operator itself starts.
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	SetDefaultEventuallyTimeout(2 * time.Minute)
}

// pinnedVersion is the version a tools module pins.
func pinnedVersion(dir, module string) string {
	GinkgoHelper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = filepath.Join(repoRoot, dir)
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "go list -m %s in %s", module, dir)
	return strings.TrimSpace(string(out))
}

// moduleDir is where a tools module's dependency lies in the module cache.
func moduleDir(dir, module string) string {
	GinkgoHelper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = filepath.Join(repoRoot, dir)
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "go list -m -f {{.Dir}} %s in %s (run `make olm`)", module, dir)
	d := strings.TrimSpace(string(out))
	Expect(d).NotTo(BeEmpty(), "%s is not in the module cache (run `make olm`)", module)
	return d
}

func existing(path, hint string) string {
	GinkgoHelper()
	_, err := os.Stat(path)
	Expect(err).NotTo(HaveOccurred(), "%s is missing: run %s", path, hint)
	return path
}

var _ = BeforeSuite(func(ctx SpecContext) {
	suiteT0 = time.Now()
	var err error
	repoRoot, err = testutil.FindRepoRoot(".")
	Expect(err).NotTo(HaveOccurred())
	logDir, err = os.MkdirTemp("", "platform-operator-olm-logs-")
	Expect(err).NotTo(HaveOccurred())
	workDir, err = os.MkdirTemp("", "platform-operator-olm-")
	Expect(err).NotTo(HaveOccurred())

	olmBin = existing(filepath.Join(repoRoot, "bin", "olm-"+pinnedVersion("hack/tools/olm", olmModule)), "make olm")
	existing(filepath.Join(olmBin, "olm"), "make olm")
	existing(filepath.Join(olmBin, "catalog"), "make olm")
	opmBin = existing(filepath.Join(repoRoot, "bin", "opm-"+pinnedVersion("hack/tools/opm", opmModule)), "make olm")
	operatorBin = existing(filepath.Join(repoRoot, "bin", "platform-operator"), "make build")
	previous = previousRelease()
	olmCRDs := existing(filepath.Join(moduleDir("hack/tools/olm", olmModule), "deploy", "chart", "crds"), "make olm")
	fmt.Fprintf(os.Stdout, "olm: OLM %s, opm %s, logs in %s\n", olmBin, opmBin, logDir)

	Expect(operatorsv1alpha1.AddToScheme(scheme.Scheme)).To(Succeed())
	Expect(operatorsv1.AddToScheme(scheme.Scheme)).To(Succeed())

	phase("cluster start", func() {
		// Only OLM's CRDs (and the external cert-manager and Route ones): the operator's own CRD comes
		// from the bundle, installed by OLM. The Prometheus Operator's PrometheusRule and ServiceMonitor
		// are served (by stand-ins in testdata) because the bundle ships one of each, and OLM fails an
		// InstallPlan whose object's kind the cluster does not serve (docs/olm.md, "Monitoring").
		cluster = localcluster.New(localcluster.WithWorkloads(localcluster.Options{
			RepoRoot:       repoRoot,
			CRDDirectories: []string{olmCRDs, filepath.Join(repoRoot, "test", "olm", "testdata", "monitoring-crds")},
			Scheme:         scheme.Scheme,
			LogDir:         filepath.Join(logDir, "cluster"),
		}))
		Expect(cluster.Start(ctx)).To(Succeed(), "start the local cluster; logs in %s", filepath.Join(logDir, "cluster"))
	})
	k8s = cluster.Client()
}, NodeTimeout(6*time.Minute))

// AfterSuite stops every process (platform-operator, opm, catalog, olm, in reverse start order) and the
// cluster, then proves nothing is left behind.
var _ = AfterSuite(func() {
	var errs []error
	t := time.Now()
	ps := allProcs()
	for i := len(ps) - 1; i >= 0; i-- {
		if err := ps[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	timings.Record("processes stop", time.Since(t), "")
	if cluster != nil {
		took, err := cluster.StopAndCheck()
		timings.Record("cluster stop", took, "")
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range ps {
		if err := p.checkGone(); err != nil {
			errs = append(errs, err)
		}
	}
	if workDir != "" {
		// Every process of the suite has workDir in its arguments (catalog, cache, kubeconfig).
		left, err := localcluster.ProcessesMentioning(workDir)
		if err != nil {
			errs = append(errs, err)
		}
		for _, p := range left {
			errs = append(errs, fmt.Errorf("still running: %s", p))
		}
		_ = os.RemoveAll(workDir)
	}
	if len(errs) == 0 {
		fmt.Fprintf(os.Stdout, "olm: no process or port left behind (%d processes and the cluster checked)\n", len(ps))
	}
	timings.Record("suite (total)", time.Since(suiteT0), "")
	timings.Print()
	Expect(errors.Join(errs...)).NotTo(HaveOccurred())
})

// ReportAfterSuite keeps the logs of a failed run and removes those of a passing one.
var _ = ReportAfterSuite("logs", func(r Report) {
	testutil.KeepLogsOfFailure(os.Stdout, "olm", logDir, r.SuiteSucceeded)
})

// newNamespace creates a namespace.
func createNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}
