package irc

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The suite runs the reconciler in a manager against a real kube-apiserver and etcd (envtest, through the
// shared harness testenv) that serves our CRD plus cert-manager's, OpenShift's and the Prometheus Operator's
// PodMonitor (a fixture in testdata/crds), and asserts through a direct, uncached client. The restore
// specs use one real S3 server (versitygw, started by TestMain) and run their Jobs' containers on this
// machine (jobrun): envtest has no kubelet.
var (
	cfg        *rest.Config
	k8s        client.Client // direct: no cache between the test and the API server
	testEnv    *testenv.Env
	reconciler *ErgoNetworkReconciler
	writes     = &testutil.WriteCounter{} // write requests the reconciler's client sent, by namespace
	suiteCtx   context.Context
	cancel     context.CancelFunc
	// s3 is the package's S3 server (versitygw on 127.0.0.1), for the restore specs' backups.
	s3 *s3test.Server
)

// testOperatorImage is the operator's image the suite's reconciler knows (RELATED_IMAGE_OPERATOR): the
// restore Jobs name it; envtest has no kubelet, so it never runs.
const testOperatorImage = "registry.test/platform-operator:test"

func TestMain(m *testing.M) { s3test.Main(m, "controllers/irc", &s3) }

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ErgoNetwork controller")
}

// startManager runs the irc group in a manager built by internal/kit/manager, as main.go does, with its
// client's writes counted.
func startManager(ctx context.Context, cfg *rest.Config, counter *testutil.WriteCounter) *ErgoNetworkReconciler {
	caps, err := platform.Discover(cfg)
	Expect(err).NotTo(HaveOccurred())
	r := &ErgoNetworkReconciler{Image: "registry.example/ergo:test", MaxConcurrentReconciles: 2, observeRender: countRender,
		OperatorImage: testOperatorImage}
	testenv.RunManager(ctx, cfg, testenv.ManagerOptions(counter), caps, groupOf(ergoNetworks(r)))
	return r
}

var _ = BeforeSuite(func() {
	suiteCtx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, err = testenv.Start(testenv.Options{External: true, CRDDirs: []string{filepath.Join("testdata", "crds")}})
	Expect(err).NotTo(HaveOccurred())
	cfg, k8s = testEnv.Config, testEnv.Client
	reconciler = startManager(suiteCtx, cfg, writes)
	Expect(reconciler.Capabilities).To(Equal(platform.Capabilities{CertManager: true, Routes: true, Istio: true, PodMonitors: true, Backups: true}))
})

var _ = AfterSuite(func() {
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})

// newNamespace gives each spec a namespace of its own.
func newNamespace() string {
	GinkgoHelper()
	return testenv.NewNamespace(k8s, "irc")
}

func init() { testenv.SetDefaults() }
