package irc

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The suite runs the reconciler in a manager against a real kube-apiserver and etcd (envtest) that serves
// our CRD plus cert-manager's and OpenShift's, and asserts through a direct, uncached client.
var (
	cfg        *rest.Config
	k8s        client.Client // direct: no cache between the test and the API server
	testEnv    *envtest.Environment
	reconciler *ErgoNetworkReconciler
	writes     = &testutil.WriteCounter{} // write requests the reconciler's client sent, by namespace
	suiteCtx   context.Context
	cancel     context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ErgoNetwork controller")
}

// crdPaths are the CRDs a cluster with cert-manager, OpenShift Routes and the Prometheus Operator's
// PodMonitor (a fixture in testdata/crds) serves.
func crdPaths(external bool) []string {
	paths := []string{filepath.Join("..", "..", "config", "crd", "bases")}
	if external {
		paths = append(paths, filepath.Join("..", "..", "config", "crd", "external"), filepath.Join("testdata", "crds"))
	}
	return paths
}

// startManager runs the irc group in a manager built by internal/manager, as main.go does, with its
// client's writes counted.
func startManager(ctx context.Context, cfg *rest.Config, counter *testutil.WriteCounter) *ErgoNetworkReconciler {
	caps, err := platform.Discover(cfg)
	Expect(err).NotTo(HaveOccurred())
	r := &ErgoNetworkReconciler{Image: "registry.example/ergo:test", MaxConcurrentReconciles: 2, observeRender: countRender}
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Two suites run a manager each in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  counter.NewClient,
	}, caps, Group(r))
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return r
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, cancel = context.WithCancel(context.Background())
	testEnv = &envtest.Environment{CRDDirectoryPaths: crdPaths(true), ErrorIfCRDPathMissing: true}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	reconciler = startManager(suiteCtx, cfg, writes)
	Expect(reconciler.Capabilities).To(Equal(platform.Capabilities{CertManager: true, Routes: true, Istio: true, PodMonitors: true}))
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace gives each spec a namespace of its own.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "irc-"}}
	Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

func init() {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
}
