package iot

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The suite runs the iot group in a manager against a real kube-apiserver and etcd (envtest, through the
// shared harness testenv) and a real
// NATS server with JetStream (in-process, 127.0.0.1), both started once for the package; devices are
// the real agent with a fake container runtime.
var (
	k8s        client.Client // direct: no cache between the test and the API server
	testEnv    *testenv.Env
	natsServer *fleettest.Server
	nc         *nats.Conn
	fleetStore *store.Store
	reconciler *DeploymentReconciler
	// suiteAuthority issues the credentials whose labels the reconciler trusts.
	suiteAuthority *auth.Authority
	writes         = &testutil.WriteCounter{}
	suiteCtx       context.Context
	cancel         context.CancelFunc
)

// heartbeatTTL is short so that a stopped device turns stale within the suite's patience.
const heartbeatTTL = 3 * time.Second

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iot Deployment controller")
}

// startManager runs the iot group in a manager built by internal/kit/manager, as main.go does.
func startManager(ctx context.Context, cfg *rest.Config, r *DeploymentReconciler, counter *testutil.WriteCounter) {
	opts := testenv.ManagerOptions(counter)
	// The group's webhook, served as in the operator; the API server calls it only for the namespaces
	// deployment_webhook_test.go installs its configuration for.
	opts.WebhookServer = webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: webhookPort, CertDir: webhookCerts.Dir})
	testenv.RunManager(ctx, cfg, opts, platform.Capabilities{}, groupOf(r))
}

var _ = BeforeSuite(func() {
	suiteCtx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, err = testenv.Start(testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8s = testEnv.Client

	natsServer, err = fleettest.StartServer()
	Expect(err).NotTo(HaveOccurred())
	nc, fleetStore, err = fleettest.Connect(suiteCtx, natsServer.ClientURL(), heartbeatTTL)
	Expect(err).NotTo(HaveOccurred())

	// The authority whose device credentials the reconciler trusts (credential_labels_test.go).
	suiteAuthority, err = auth.Init()
	Expect(err).NotTo(HaveOccurred())
	verifier, err := auth.NewVerifier(suiteAuthority.AccountJWT)
	Expect(err).NotTo(HaveOccurred())
	reconciler = &DeploymentReconciler{Store: fleetStore, StatusInterval: 200 * time.Millisecond, MaxConcurrentReconciles: 2, Policy: suitePolicy(),
		Credentials: verifier}
	webhookCerts, webhookPort = startWebhookCerts()
	// The manager runs with exactly the operator's ClusterRole (config/rbac/role.yaml, generated from the
	// +kubebuilder:rbac markers): a rule missing there (the ControllerRevisions of rollbacks) fails here.
	managerConfig, err := testEnv.ClusterRoleUser(suiteCtx, "iot-manager", filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	startManager(suiteCtx, managerConfig, reconciler, writes)
})

var _ = AfterSuite(func() {
	cancel()
	if nc != nil {
		nc.Close()
	}
	if natsServer != nil {
		natsServer.Shutdown()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

// newNamespace gives each spec a namespace of its own.
func newNamespace() string {
	GinkgoHelper()
	return testenv.NewNamespace(k8s, "iot")
}

func init() { testenv.SetDefaults() }
