package backup

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The suite runs the backup group in a manager built by internal/kit/manager, as main.go does, with the
// operator's ClusterRole and nothing more (a user of its own bound to config/rbac/role.yaml, generated
// from the RBAC markers), against a real kube-apiserver and etcd (envtest), one real S3 server (versitygw,
// started by TestMain) and one real PostgreSQL server. envtest has no kubelet: a backup's Job never runs
// by itself, so specs run its container's command on this machine and mark the Job finished, as a kubelet
// and the Job controller would. Specs assert through k8s, a direct client with no cache in between.
var (
	k8s         client.Client
	testEnv     *testenv.Env
	writes      = &testutil.WriteCounter{}
	pg          *postgrestest.Server
	s3          *s3test.Server
	suiteCtx    context.Context
	cancelSuite context.CancelFunc
	// managerConfig is the manager's identity: managerUser, bound to the operator's ClusterRole only.
	managerConfig *rest.Config
)

// managerUser is who the suite's manager authenticates as.
const managerUser = "platform-operator-manager"

// testOptions are the group's options in this suite.
var testOptions = Options{MaxConcurrentReconciles: 2, OperatorImage: "registry.test/platform-operator:test",
	PostgresImage: "registry.test/postgres:%d"}

func TestMain(m *testing.M) { s3test.Main(m, "controllers/backup", &s3) }

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "backup controllers")
}

var _ = BeforeSuite(func() {
	suiteCtx, cancelSuite = context.WithCancel(context.Background())
	var err error
	pg, err = postgrestest.Start(suiteCtx)
	Expect(err).NotTo(HaveOccurred())
	testEnv, err = testenv.Start(testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8s = testEnv.Client
	caps, err := testEnv.Discover()
	Expect(err).NotTo(HaveOccurred())
	managerConfig, err = testEnv.ClusterRoleUser(suiteCtx, managerUser, filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	testenv.RunManager(suiteCtx, managerConfig, testEnv.ManagerOptions(writes), caps, Group(testOptions))
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

func init() { testenv.SetDefaults() }

// newNamespace makes a namespace of the spec's own, named prefix-<random>.
func newNamespace(prefix string) string {
	GinkgoHelper()
	return testenv.NewNamespace(k8s, prefix)
}
