package iot

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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

	"github.com/platform-operator/platform-operator/internal/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/fleet/store"
	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/platform"
	"github.com/platform-operator/platform-operator/internal/scheme"
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
	writes     = &writeCounter{}
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
func startManager(ctx context.Context, cfg *rest.Config, r *DeploymentReconciler, counter *writeCounter) {
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		NewClient:  counter.newClient,
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

	reconciler = &DeploymentReconciler{Store: fleetStore, StatusInterval: 200 * time.Millisecond, MaxConcurrentReconciles: 2}
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

// writeCounter counts write requests per namespace.
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

func (w *writeCounter) in(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[ns]
}

// newClient is the manager's client with every write request it sends counted.
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
