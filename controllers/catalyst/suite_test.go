package catalyst

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The suite runs the catalyst group in a manager built by internal/manager, as main.go does, against a
// real kube-apiserver and etcd (envtest) that serves our CRDs and cert-manager's and calls the Environment
// webhook as config/webhook declares it (its kustomize output, matchConditions included: what ships). It
// asserts through a direct, uncached client. envtest runs no namespace controller: specs finalize deleted
// namespaces themselves, as that controller would. Previews expire by testClock, which specs move.
var (
	k8s       client.Client // direct: no cache between the test and the API server
	clientset *kubernetes.Clientset
	testEnv   *envtest.Environment
	writes    = &testutil.WriteCounter{}
	cancel    context.CancelFunc
	testClock = &movableClock{}
)

// movableClock is the real time plus an offset specs move forward (previews expire by it).
type movableClock struct{ offset atomic.Int64 }

func (c *movableClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock d forward.
func (c *movableClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// webhookManifests is testutil.WebhookManifests, failing the suite when it cannot build.
func webhookManifests(root, dir string) string {
	GinkgoHelper()
	path, err := testutil.WebhookManifests(root, dir)
	Expect(err).NotTo(HaveOccurred())
	return path
}

// testDefaults are the operator's flags in this suite.
var testDefaults = catalyst.Defaults{
	Domain: "preview.test", IngressNamespace: "ingress-nginx", AllowedDomains: []string{"preview.example.com"},
	Issuer: catalystv1.IssuerRef{Name: catalysttest.Issuer, Kind: "ClusterIssuer"},
}

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "catalyst controllers")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	root := filepath.Join("..", "..")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, "config", "crd", "external"),
		},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{webhookManifests(root, GinkgoT().TempDir())},
		},
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(testEnv.WebhookInstallOptions.ValidatingWebhooks).To(HaveLen(1), "config/webhook declares the Environment webhooks")
	k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	installTenantRole(ctx)
	testRegistry = catalysttest.StartRegistry(registryUser, registryPassword)
	testGit = startGitServer()
	caps, err := platform.Discover(cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(caps.CertManager).To(BeTrue())
	wio := &testEnv.WebhookInstallOptions
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  writes.NewClient,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	}, caps, Group(Options{Defaults: testDefaults, MaxConcurrentReconciles: 2, Build: testBuildConfig(), Deploy: deployConfig(), Now: testClock.Now}))
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if testRegistry != nil {
		testRegistry.Close()
	}
	if testGit != nil {
		testGit.Close()
	}
})

// installTenantRole installs the tenant ClusterRole the operator ships (config/rbac, which OLM installs
// with kustomize's name prefix): what every repository's objects are sent as in these specs too.
func installTenantRole(ctx context.Context) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "catalyst_tenant_role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.UnmarshalStrict(data, role)).To(Succeed())
	role.Name = catalyst.DefaultTenantClusterRole
	Expect(k8s.Create(ctx, role)).To(Succeed())
}

func init() {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
}
