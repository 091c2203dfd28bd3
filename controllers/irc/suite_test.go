package irc

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/scheme"
)

// The suite runs the reconciler in a manager against a real kube-apiserver and etcd (envtest) that serves
// our CRD plus cert-manager's and OpenShift's, and asserts through a direct, uncached client.
var (
	cfg        *rest.Config
	k8s        client.Client // direct: no cache between the test and the API server
	testEnv    *envtest.Environment
	reconciler *ErgoNetworkReconciler
	writes     = &writeCounter{} // write requests the reconciler's client sent, by namespace
	suiteCtx   context.Context
	cancel     context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ErgoNetwork controller")
}

// crdPaths are the CRDs a cluster with cert-manager and OpenShift Routes serves.
func crdPaths(external bool) []string {
	paths := []string{filepath.Join("..", "..", "config", "crd", "bases")}
	if external {
		paths = append(paths, filepath.Join("..", "..", "config", "crd", "external"))
	}
	return paths
}

// startManager runs the irc group in a manager built by internal/manager, as main.go does, with its
// client's writes counted.
func startManager(ctx context.Context, cfg *rest.Config, counter *writeCounter) *ErgoNetworkReconciler {
	caps, err := platform.Discover(cfg)
	Expect(err).NotTo(HaveOccurred())
	r := &ErgoNetworkReconciler{Image: "registry.example/ergo:test", MaxConcurrentReconciles: 2}
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Two suites run a manager each in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  counter.newClient,
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
	Expect(reconciler.Capabilities).To(Equal(platform.Capabilities{CertManager: true, Routes: true, Istio: true}))
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

// writeCounter counts write requests per namespace, so a spec can count its own network's writes while
// networks of earlier specs settle in the background.
type writeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *writeCounter) add(obj any) {
	ns := ""
	if o, ok := obj.(interface{ GetNamespace() string }); ok {
		ns = o.GetNamespace()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.n[ns]++
}

// in is the number of writes to objects in namespace ns so far.
func (w *writeCounter) in(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[ns]
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
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, o, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			w.add(o)
			return c.SubResource(sub).Create(ctx, o, subObj, opts...)
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
