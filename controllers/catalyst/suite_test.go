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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The suite runs the catalyst group in a manager built by internal/kit/manager, as main.go does, with the
// operator's ClusterRole and nothing more, against a
// real kube-apiserver and etcd (envtest, through the shared harness testenv) that serves our CRDs and
// cert-manager's and calls the Environment webhook as config/webhook declares it (its kustomize output,
// matchConditions included: what ships). It asserts through a direct, uncached client. envtest runs no
// namespace controller: specs finalize deleted namespaces themselves, as that controller would. Previews
// expire by testClock, which specs move.
var (
	k8s       client.Client // direct: no cache between the test and the API server
	clientset *kubernetes.Clientset
	suiteEnv  *testenv.Env         // the shared envtest harness
	testEnv   *envtest.Environment // suiteEnv's: where the webhooks are installed and served
	writes    = &testutil.WriteCounter{}
	cancel    context.CancelFunc
	testClock = &movableClock{}
	// managerConfig is the manager's identity: managerUser, bound to the operator's ClusterRole only.
	managerConfig *rest.Config
)

// managerUser is who the suite's manager authenticates as.
const managerUser = "platform-operator-manager"

// movableClock is the real time plus an offset specs move forward (previews expire by it).
type movableClock struct{ offset atomic.Int64 }

func (c *movableClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock d forward.
func (c *movableClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

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
	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	suiteEnv, err = testenv.Start(testenv.Options{External: true, Webhooks: true})
	Expect(err).NotTo(HaveOccurred())
	testEnv, k8s = suiteEnv.Environment, suiteEnv.Client
	Expect(testEnv.WebhookInstallOptions.ValidatingWebhooks).To(HaveLen(1), "config/webhook declares the Environment webhooks")
	clientset, err = kubernetes.NewForConfig(suiteEnv.Config)
	Expect(err).NotTo(HaveOccurred())

	installTenantRole(ctx)
	testRegistry = catalysttest.StartRegistry(registryUser, registryPassword)
	testGit = startGitServer()
	caps, err := suiteEnv.Discover()
	Expect(err).NotTo(HaveOccurred())
	Expect(caps.CertManager).To(BeTrue())
	// The manager runs with exactly the operator's ClusterRole (config/rbac/role.yaml, generated from the
	// RBAC markers, which the CSV grants), as a user of its own, not as the administrator: a permission the
	// markers lack fails here as it would in a cluster.
	managerConfig, err = suiteEnv.ClusterRoleUser(ctx, managerUser, filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	testenv.RunManager(ctx, managerConfig, suiteEnv.ManagerOptions(writes), caps,
		Group(Options{Defaults: testDefaults, MaxConcurrentReconciles: 2, Build: testBuildConfig(), Deploy: deployConfig(), Now: testClock.Now}))
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(suiteEnv.Stop()).To(Succeed())
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

func init() { testenv.SetDefaults() }
