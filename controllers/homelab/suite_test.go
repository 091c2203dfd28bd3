package homelab

import (
	"context"
	"fmt"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/scheme"
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
	writes = &writeCounter{}
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

	testEnv = &envtest.Environment{CRDDirectoryPaths: crdPaths(), ErrorIfCRDPathMissing: true}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	caps, err = platform.Discover(cfg)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:   metricsserver.Options{BindAddress: "0"},
		NewClient: writes.newClient,
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

// newNamespace makes a namespace of the spec's own, named prefix-<random>.
func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// writeCounter counts write requests per namespace, so a spec can count its own objects' writes while
// objects of earlier specs settle in the background.
type writeCounter struct {
	mu  sync.Mutex
	n   map[string]int
	log map[string][]string
}

func (w *writeCounter) add(obj any) {
	ns, what := "", fmt.Sprintf("%T", obj)
	if o, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	}); ok {
		ns = o.GetNamespace()
		what += " " + o.GetName()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n, w.log = map[string]int{}, map[string][]string{}
	}
	w.n[ns]++
	w.log[ns] = append(w.log[ns], what)
}

// since lists the writes to objects in namespace ns after the first n (a value of in), for failure
// messages: the kind and name of each.
func (w *writeCounter) since(ns string, n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log[ns][min(n, len(w.log[ns])):]...)
}

// in is the number of write requests to objects in namespace ns so far.
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
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteAllOfOption) error {
			w.add(o)
			return c.DeleteAllOf(ctx, o, opts...)
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
