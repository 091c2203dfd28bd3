package schedulesuite

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// Package schedulesuite holds the BackupSchedule reconciler's envtest specs. They are a suite of their own
// because they write Backups' statuses by hand (no Job runs here), which the Backup controller of the
// controllers/backup suite would overwrite.
//
// The suite runs the BackupSchedule reconciler alone, in a manager built by internal/kit/manager (as
// main.go does), against a real kube-apiserver and etcd (envtest) serving the repository's CRDs. Its
// clock is the suite's fake one (clock), so specs move time instead of waiting for cron. Specs assert
// through k8s, a direct client with no cache in between.
var (
	// k8s is a direct (uncached) client for assertions.
	k8s client.Client
	// testEnv is the envtest control plane.
	testEnv *testenv.Env
	// suiteCtx lives as long as the suite; cancelSuite stops the manager.
	suiteCtx    context.Context
	cancelSuite context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "backup controllers")
}

var _ = BeforeSuite(func() {
	suiteCtx, cancelSuite = context.WithCancel(context.Background())
	var err error
	testEnv, err = testenv.Start(testenv.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8s = testEnv.Client
	caps, err := testEnv.Discover()
	Expect(err).NotTo(HaveOccurred())
	testenv.RunManager(suiteCtx, testEnv.Config, testEnv.ManagerOptions(nil), caps, scheduleGroup())
})

var _ = AfterSuite(func() {
	if cancelSuite != nil {
		cancelSuite()
	}
	Expect(testEnv.Stop()).To(Succeed())
})

func init() { testenv.SetDefaults() }

// newNamespace makes a namespace of the spec's own, named prefix-<random>.
func newNamespace(prefix string) string {
	GinkgoHelper()
	return testenv.NewNamespace(k8s, prefix)
}
