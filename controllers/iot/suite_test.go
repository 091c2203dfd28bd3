package iot

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/platform-operator/platform-operator/internal/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/fleet/store"
	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The suite runs the iot group in a manager against a real kube-apiserver and etcd (envtest) and a real
// NATS server with JetStream (in-process, 127.0.0.1), both started once for the package; devices are
// the real agent with a fake container runtime.
var (
	k8s        client.Client // direct: no cache between the test and the API server
	testEnv    *envtest.Environment
	natsServer *fleettest.Server
	nc         *nats.Conn
	fleetStore *store.Store
	reconciler *DeploymentReconciler
	writes     = &testutil.WriteCounter{}
	suiteCtx   context.Context
	cancel     context.CancelFunc
)

// heartbeatTTL is short so that a stopped device turns stale within the suite's patience.
const heartbeatTTL = 3 * time.Second

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iot Deployment controller")
}

// startManager runs the iot group in a manager built by internal/manager, as main.go does.
func startManager(ctx context.Context, cfg *rest.Config, r *DeploymentReconciler, counter *testutil.WriteCounter) {
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  counter.NewClient,
		// The group's webhook, served as in the operator; the API server calls it only for the namespaces
		// deployment_webhook_test.go installs its configuration for.
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: webhookPort, CertDir: webhookCerts.Dir}),
	}, platform.Capabilities{}, Group(r))
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, cancel = context.WithCancel(context.Background())
	testEnv = &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	natsServer, err = fleettest.StartServer()
	Expect(err).NotTo(HaveOccurred())
	nc, fleetStore, err = fleettest.Connect(suiteCtx, natsServer.ClientURL(), heartbeatTTL)
	Expect(err).NotTo(HaveOccurred())

	reconciler = &DeploymentReconciler{Store: fleetStore, StatusInterval: 200 * time.Millisecond, MaxConcurrentReconciles: 2, Policy: suitePolicy()}
	webhookCerts, webhookPort = startWebhookCerts()
	startManager(suiteCtx, cfg, reconciler, writes)
})

var _ = AfterSuite(func() {
	cancel()
	if nc != nil {
		nc.Close()
	}
	if natsServer != nil {
		natsServer.Shutdown()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// newNamespace gives each spec a namespace of its own.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "iot-"}}
	Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

func init() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
}
