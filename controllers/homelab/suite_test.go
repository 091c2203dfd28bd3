package homelab

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The suite runs the homelab group in a manager built by internal/kit/manager (as main.go does) against a real
// kube-apiserver and etcd (envtest, through the shared harness testenv) that serves our CRDs plus the
// external ones (cert-manager, OpenShift Routes, Istio) and calls the webhooks config/webhook ships (the
// Domain and AuthentikServer ones are served by the suite's manager; the catalyst ones are installed and
// never called here), and one real PostgreSQL server for the whole package. Specs assert through k8s, a
// direct client with no cache in between.
var (
	// cfg is the envtest API server's config.
	cfg *rest.Config
	// k8s is a direct (uncached) client for assertions.
	k8s client.Client
	// testEnv is the envtest control plane.
	testEnv *testenv.Env
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

var _ = BeforeSuite(func() {
	suiteCtx, cancelSuite = context.WithCancel(context.Background())

	var err error
	pg, err = postgrestest.Start(suiteCtx)
	Expect(err).NotTo(HaveOccurred())

	testEnv, err = testenv.Start(testenv.Options{External: true, Webhooks: true})
	Expect(err).NotTo(HaveOccurred())
	cfg, k8s = testEnv.Config, testEnv.Client
	caps, err = testEnv.Discover()
	Expect(err).NotTo(HaveOccurred())
	testenv.RunManager(suiteCtx, cfg, testEnv.ManagerOptions(writes), caps, Group(suiteOptions()))
})

var _ = AfterSuite(func() {
	if cancelSuite != nil {
		cancelSuite()
	}
	Expect(testEnv.Stop()).To(Succeed())
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
