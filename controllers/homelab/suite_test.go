package homelab

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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The suite runs the homelab group in a manager built by internal/manager (as main.go does) against a real
// kube-apiserver and etcd (envtest) that serves our CRDs plus the external ones (cert-manager, OpenShift
// Routes, Istio), and one real PostgreSQL server for the whole package. Specs assert through k8s, a direct
// client with no cache in between.
var (
	// cfg is the envtest API server's config.
	cfg *rest.Config
	// k8s is a direct (uncached) client for assertions.
	k8s client.Client
	// testEnv is the envtest control plane.
	testEnv *envtest.Environment
	// writes counts the write requests the manager's client sent, by namespace.
	writes = &testutil.WriteCounter{}
	// caps are the optional APIs the test API server serves, as the manager discovered them.
	caps platform.Capabilities
	// pg is the package's PostgreSQL server (127.0.0.1, every statement logged).
	pg *postgrestest.Server
	// suiteCtx lives as long as the suite; cancelSuite stops the manager.
	suiteCtx    context.Context
	cancelSuite context.CancelFunc
)

// suiteOptionHooks let test files of this package change the group's Options before the manager starts
// (from an init function), so each kind's tests set their own settings without editing this file.
var suiteOptionHooks []func(*Options)

// suiteOptions are the Options the suite's manager runs the group with.
func suiteOptions() Options {
	opts := Options{MaxConcurrentReconciles: 2}
	for _, hook := range suiteOptionHooks {
		hook(&opts)
	}
	return opts
}

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "homelab controllers")
}

// crdPaths are our CRDs and the external ones (cert-manager, Routes, Istio).
func crdPaths() []string {
	return []string{
		filepath.Join("..", "..", "config", "crd", "bases"),
		filepath.Join("..", "..", "config", "crd", "external"),
	}
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, cancelSuite = context.WithCancel(context.Background())

	var err error
	pg, err = postgrestest.Start(suiteCtx)
	Expect(err).NotTo(HaveOccurred())

	testEnv = &envtest.Environment{CRDDirectoryPaths: crdPaths(), ErrorIfCRDPathMissing: true,
		// The admission webhooks as config/webhook ships them: the Domain and AuthentikServer ones are
		// served by the suite's manager (the catalyst ones too are installed, and never called here).
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{webhookManifests(filepath.Join("..", ".."), GinkgoT().TempDir())},
		}}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	caps, err = platform.Discover(cfg)
	Expect(err).NotTo(HaveOccurred())
	wio := &testEnv.WebhookInstallOptions
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:   metricsserver.Options{BindAddress: "0"},
		NewClient: writes.NewClient,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	}, caps, Group(suiteOptions()))
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(suiteCtx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancelSuite != nil {
		cancelSuite()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if pg != nil {
		Expect(pg.Stop()).To(Succeed())
	}
})

func init() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
}

// webhookManifests is testutil.WebhookManifests, failing the suite when it cannot build.
func webhookManifests(root, dir string) string {
	GinkgoHelper()
	path, err := testutil.WebhookManifests(root, dir)
	Expect(err).NotTo(HaveOccurred())
	return path
}

// newNamespace makes a namespace of the spec's own, named prefix-<random>.
func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}
