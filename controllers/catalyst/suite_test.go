package catalyst

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/scheme"
)

// The suite runs the catalyst group in a manager built by internal/manager, as main.go does, against a
// real kube-apiserver and etcd (envtest) that serves our CRDs and cert-manager's and calls the Environment
// webhook as config/webhook declares it. It asserts through a direct, uncached client. envtest runs no
// namespace controller: specs finalize deleted namespaces themselves, as that controller would.
var (
	k8s       client.Client // direct: no cache between the test and the API server
	clientset *kubernetes.Clientset
	testEnv   *envtest.Environment
	writes    = &writeCounter{}
	cancel    context.CancelFunc
)

// testDefaults are the operator's flags in this suite.
var testDefaults = catalyst.Defaults{
	Domain: "preview.test", IngressNamespace: "ingress-nginx",
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
			Paths: []string{filepath.Join(root, "config", "webhook", "manifests.yaml")},
		},
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(testEnv.WebhookInstallOptions.ValidatingWebhooks).To(HaveLen(1), "config/webhook/manifests.yaml declares the Environment webhook")
	k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	caps, err := platform.Discover(cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(caps.CertManager).To(BeTrue())
	wio := &testEnv.WebhookInstallOptions
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  writes.newClient,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	}, caps, Group(Options{Defaults: testDefaults, MaxConcurrentReconciles: 2}))
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
})

func init() {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
}

// writeCounter counts write requests by namespace (a Namespace's by its own name), so that a spec counts
// the writes of its own environment while others settle in the background.
type writeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *writeCounter) add(obj any) {
	key := ""
	if o, ok := obj.(interface{ GetNamespace() string }); ok {
		key = o.GetNamespace()
	}
	if o, ok := obj.(interface {
		GetKind() string
		GetName() string
	}); ok && o.GetKind() == "Namespace" {
		key = o.GetName()
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		key = ns.Name
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[key]++
}

// in is the number of writes so far to objects in (or being) any of namespaces.
func (w *writeCounter) in(namespaces ...string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ns := range namespaces {
		n += w.n[ns]
	}
	return n
}

// newClient is the manager's client with every write request it sends counted, status writes included.
func (w *writeCounter) newClient(cfg *rest.Config, opts client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, opts)
	if err != nil {
		return nil, err
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			w.add(o)
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			w.add(o)
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.add(o)
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			w.add(o)
			return c.Apply(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			w.add(o)
			return c.Delete(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(o)
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(o)
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}), nil
}
