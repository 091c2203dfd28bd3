package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// DefaultServiceClusterIPRange is wide enough for benchmarks with thousands of Services; envtest's own
// default (10.0.0.0/24) runs out at about 250.
const DefaultServiceClusterIPRange = "10.96.0.0/12"

// Phase names passed to Options.Progress.
const (
	PhaseControlPlane = "etcd + kube-apiserver"
	PhaseCRDs         = "CRDs"
	PhaseKubeconfig   = "admin kubeconfig"
)

// ErrStopped is returned by Start on a cluster that was stopped; a Cluster runs at most once.
var ErrStopped = errors.New("localcluster: cluster was stopped")

// Options say which cluster to start. The zero value is the usual one: binaries from
// $KUBEBUILDER_ASSETS or bin/k8s/<KubernetesVersion>, the project's CRDs and the external ones.
type Options struct {
	// RepoRoot is the repository root, the base of every default path. Default: testutil.FindRepoRoot of the
	// working directory.
	RepoRoot string
	// BinaryAssetsDirectory holds etcd and kube-apiserver, and the components' binaries
	// (kube-controller-manager, kube-scheduler, kwok: `make controlplane-full`). Default:
	// $KUBEBUILDER_ASSETS, else DefaultAssetsDirectory(RepoRoot). Unlike bare envtest, a value here
	// wins over $KUBEBUILDER_ASSETS.
	BinaryAssetsDirectory string
	// CRDDirectories hold the project's own CRDs. Default: <RepoRoot>/config/crd/bases.
	CRDDirectories []string
	// SkipExternalCRDs leaves out <RepoRoot>/config/crd/external, for a cluster without cert-manager's
	// and OpenShift's APIs.
	SkipExternalCRDs bool
	// ServiceClusterIPRange is kube-apiserver's --service-cluster-ip-range.
	// Default: DefaultServiceClusterIPRange.
	ServiceClusterIPRange string
	// Scheme is the client's scheme. Default: the operator's (internal/kit/scheme): the built-in APIs,
	// irc.josie.cloud/v1alpha1, cert-manager.io/v1 and route.openshift.io/v1.
	Scheme *runtime.Scheme
	// Components run against the control plane once the CRDs are served, started in order and
	// stopped in reverse order before kube-apiserver and etcd. This is where kube-controller-manager,
	// kube-scheduler and kwok plug in.
	Components []Component
	// ControlPlaneOutput receives the stdout and stderr of etcd, kube-apiserver and the components'
	// processes, when LogDir is empty. It must be safe for concurrent writes. Default: discarded.
	ControlPlaneOutput io.Writer
	// LogDir, when set, gets one <name>.log file per process (etcd, kube-apiserver, then one per
	// component process) instead of ControlPlaneOutput. Stop leaves it in place, for a failed test to
	// show what the control plane said.
	LogDir string
	// ServiceAccountAdmission turns kube-apiserver's ServiceAccount admission plugin back on (envtest
	// turns it off because it has no controller creating the "default" ServiceAccount): pods then get
	// their ServiceAccount and token volume as in a real cluster. It needs kube-controller-manager's
	// serviceaccount controller, so WithWorkloads sets it.
	ServiceAccountAdmission bool
	// StartTimeout bounds the start of each control-plane process. Default: 60s, generous because
	// a loaded 2-core machine is slow to bring kube-apiserver up.
	StartTimeout time.Duration
	// StopTimeout bounds the graceful stop of each control-plane process before it is killed.
	// Default: 20s.
	StopTimeout time.Duration
	// Progress, when set, is told each phase of Start and how long it took (PhaseControlPlane,
	// PhaseCRDs, PhaseKubeconfig, then "component <name>" per component).
	Progress func(phase string, took time.Duration)
}

// Cluster is one local control plane. Create it with New, run it with Start and always end it with
// Stop, which is idempotent and safe to call from any goroutine, also while Start is running (a
// signal handler's goroutine, say). The accessors describe a cluster whose Start succeeded.
type Cluster struct {
	opts Options

	stopOnce sync.Once
	stopErr  error
	stopCh   chan struct{} // closed when Stop begins; aborts a running Start between phases

	mu         sync.Mutex // held by Start and the teardown in Stop
	started    bool
	dir        string
	assets     string
	env        *envtest.Environment
	cfg        *rest.Config
	client     client.Client
	kubeconfig string
	crds       []*apiextensionsv1.CustomResourceDefinition
	running    []Component // components started so far, in start order
	logs       []io.Closer // control-plane log files, closed by Stop

	addrMu sync.Mutex
	addrs  []string // every host:port a process of this cluster listens on, for CheckStopped
}

// New returns a cluster that has not started; it does nothing until Start.
func New(opts Options) *Cluster {
	return &Cluster{opts: opts, stopCh: make(chan struct{})}
}

// Start creates the cluster's directory, starts etcd and kube-apiserver on 127.0.0.1, installs the
// CRDs, writes the admin kubeconfig and starts the Components. It returns once all of them are ready.
// If it fails or ctx ends, it stops what it started; calling Stop afterwards is still fine.
func (c *Cluster) Start(ctx context.Context) error {
	if err := c.start(ctx); err != nil {
		return errors.Join(err, c.Stop())
	}
	return nil
}

// Stop stops the components in reverse order, then kube-apiserver and etcd, waiting for each process
// to exit, and removes the cluster's directory. It is idempotent: later and concurrent calls wait for
// the first one and return its result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		close(c.stopCh)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stopErr = c.teardown()
	})
	return c.stopErr
}

func (c *Cluster) start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()

	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stopCh:
		return ErrStopped
	default:
	}
	if c.started {
		return errors.New("localcluster: Start called twice")
	}
	c.started = true

	if err := c.defaults(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "localcluster-")
	if err != nil {
		return err
	}
	c.dir = dir

	if err := c.phase(ctx, PhaseControlPlane, c.startControlPlane); err != nil {
		return err
	}
	if err := c.phase(ctx, PhaseCRDs, c.installCRDs); err != nil {
		return err
	}
	if err := c.phase(ctx, PhaseKubeconfig, c.writeKubeconfig); err != nil {
		return err
	}
	cl, err := client.New(c.cfg, client.Options{Scheme: c.opts.Scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	c.client = cl

	for _, comp := range c.opts.Components {
		// A component is stopped even when its Start fails half way.
		c.running = append(c.running, comp)
		if err := c.phase(ctx, "component "+comp.Name(), func() error { return comp.Start(ctx, c) }); err != nil {
			return err
		}
	}
	return nil
}

// phase runs one step of Start, unless ctx already ended, and reports its duration.
func (c *Cluster) phase(ctx context.Context, name string, f func() error) error {
	select {
	case <-c.stopCh:
		return fmt.Errorf("localcluster: %s not started: %w", name, ErrStopped)
	default:
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("localcluster: %s not started: %w", name, err)
	}
	t := time.Now()
	if err := f(); err != nil {
		return fmt.Errorf("localcluster: %s: %w", name, err)
	}
	if c.opts.Progress != nil {
		c.opts.Progress(name, time.Since(t))
	}
	return nil
}

func (c *Cluster) defaults() error {
	o := &c.opts
	if o.RepoRoot == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if o.RepoRoot, err = testutil.FindRepoRoot(wd); err != nil {
			return err
		}
	}
	assets, err := resolveAssets(o.BinaryAssetsDirectory, os.Getenv(AssetsEnv), o.RepoRoot)
	if err != nil {
		return err
	}
	c.assets = assets
	if len(o.CRDDirectories) == 0 {
		o.CRDDirectories = []string{filepath.Join(o.RepoRoot, "config", "crd", "bases")}
	}
	if o.ServiceClusterIPRange == "" {
		o.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if o.Scheme == nil {
		o.Scheme = scheme.Scheme
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 20 * time.Second
	}
	return existingDirs(c.crdDirectories())
}

func (c *Cluster) crdDirectories() []string {
	dirs := append([]string(nil), c.opts.CRDDirectories...)
	if !c.opts.SkipExternalCRDs {
		dirs = append(dirs, filepath.Join(c.opts.RepoRoot, "config", "crd", "external"))
	}
	return dirs
}

// startControlPlane starts etcd and kube-apiserver with every listener on 127.0.0.1 and their state
// under the cluster's directory, so Stop's one RemoveAll cleans up after both.
func (c *Cluster) startControlPlane() error {
	etcdDir := filepath.Join(c.dir, "etcd")
	apiDir := filepath.Join(c.dir, "kube-apiserver")
	for _, d := range []string{etcdDir, apiDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	ports, err := testutil.FreePorts(3)
	if err != nil {
		return err
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory:    c.assets,
		ControlPlaneStartTimeout: c.opts.StartTimeout,
		ControlPlaneStopTimeout:  c.opts.StopTimeout,
		Scheme:                   c.opts.Scheme,
	}
	// Set explicitly: $KUBEBUILDER_ASSETS would otherwise win over BinaryAssetsDirectory.
	etcdPath, err := withDeathSignal(filepath.Join(c.dir, "bin"), filepath.Join(c.assets, "etcd"))
	if err != nil {
		return err
	}
	apiPath, err := withDeathSignal(filepath.Join(c.dir, "bin"), filepath.Join(c.assets, "kube-apiserver"))
	if err != nil {
		return err
	}
	etcdOut, err := c.controlPlaneOutput("etcd")
	if err != nil {
		return err
	}
	apiOut, err := c.controlPlaneOutput("kube-apiserver")
	if err != nil {
		return err
	}

	etcd := &envtest.Etcd{
		Path:    etcdPath,
		DataDir: etcdDir,
		URL:     &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))},
		Out:     etcdOut,
		Err:     etcdOut,
	}
	peer := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	etcd.Configure().Set("listen-peer-urls", "http://"+peer)
	env.ControlPlane.Etcd = etcd

	api := env.ControlPlane.GetAPIServer()
	api.Path = apiPath
	api.CertDir = apiDir
	env.ControlPlane.KubectlPath = filepath.Join(c.assets, "kubectl")
	api.Out = apiOut
	api.Err = apiOut
	api.ListenAddr = envtest.ListenAddr{Address: "127.0.0.1", Port: strconv.Itoa(ports[2])}
	api.Configure().
		Set("bind-address", "127.0.0.1").
		Set("advertise-address", "127.0.0.1").
		Set("service-cluster-ip-range", c.opts.ServiceClusterIPRange)
	if c.opts.ServiceAccountAdmission {
		api.Configure().Disable("disable-admission-plugins")
	}
	c.trackAddrs(etcd.URL.Host, peer, api.HostPort())

	// Stop must find the environment even when Start fails half way: envtest stops whatever of
	// etcd and kube-apiserver it got running.
	c.env = env
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

func (c *Cluster) installCRDs() error {
	crds, err := envtest.InstallCRDs(c.cfg, envtest.CRDInstallOptions{
		Scheme:             c.opts.Scheme,
		Paths:              c.crdDirectories(),
		ErrorIfPathMissing: true,
		MaxTime:            c.opts.StartTimeout,
	})
	if err != nil {
		return err
	}
	c.crds = crds
	return nil
}

func (c *Cluster) writeKubeconfig() error {
	user, err := c.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	path := filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	c.kubeconfig = path
	return nil
}

func (c *Cluster) teardown() error {
	var errs []error
	for i := len(c.running) - 1; i >= 0; i-- {
		if err := c.running[i].Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", c.running[i].Name(), err))
		}
	}
	c.running = nil
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop control plane: %w", err))
		}
	}
	for _, l := range c.logs {
		_ = l.Close()
	}
	c.logs = nil
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// controlPlaneOutput is where etcd's or kube-apiserver's output goes; envtest wants a plain writer.
func (c *Cluster) controlPlaneOutput(name string) (io.Writer, error) {
	w, err := c.output(name)
	if err != nil || w == nil {
		return nil, err
	}
	c.logs = append(c.logs, w)
	return w, nil
}

// trackAddrs records addresses a process of the cluster listens on, for CheckStopped.
func (c *Cluster) trackAddrs(addrs ...string) {
	c.addrMu.Lock()
	defer c.addrMu.Unlock()
	c.addrs = append(c.addrs, addrs...)
}

// Config returns a copy of the admin (system:masters) REST config.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.cfg) }

// Client returns a direct (uncached) client with the cluster's scheme, acting as admin.
func (c *Cluster) Client() client.Client { return c.client }

// Scheme returns the scheme the client uses.
func (c *Cluster) Scheme() *runtime.Scheme { return c.opts.Scheme }

// KubeconfigPath is the admin kubeconfig file, for kubectl and for processes such as the operator.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// Dir is the cluster's temporary directory (etcd data, kube-apiserver certificates, kubeconfig);
// components may keep their state in it. Stop removes it.
func (c *Cluster) Dir() string { return c.dir }

// BinaryPath is the path of a control-plane binary (such as kube-controller-manager or kubectl) in the
// cluster's binary directory; it may not exist.
func (c *Cluster) BinaryPath(name string) string { return filepath.Join(c.assets, name) }

// APIServerCertDir holds kube-apiserver's certificates and its service-account signing key
// (sa-signer.key), which kube-controller-manager needs to issue service-account tokens.
func (c *Cluster) APIServerCertDir() string { return c.env.ControlPlane.APIServer.CertDir }

// APIServerURL is kube-apiserver's secure URL.
func (c *Cluster) APIServerURL() *url.URL {
	return c.env.ControlPlane.APIServer.SecureServing.URL("https", "/")
}

// EtcdURL is etcd's client URL.
func (c *Cluster) EtcdURL() *url.URL { return c.env.ControlPlane.Etcd.URL }

// CRDs are the CustomResourceDefinitions Start installed.
func (c *Cluster) CRDs() []*apiextensionsv1.CustomResourceDefinition { return c.crds }
