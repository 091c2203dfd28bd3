// Package testenv is the one envtest harness every controller suite and the kit's envtest tests share: a
// real kube-apiserver and etcd serving the repository's CRDs (and, when asked, the external ones and
// config/webhook as it ships), a direct client on scheme.Scheme, the manager built through manager.New as
// main.go builds it, namespaces of a spec's own, and the suites' one Eventually default.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// The suites' patience: one default for every Eventually and Consistently, long enough for a cold run
// on a loaded two-core machine (the assertions, not the timing, decide a spec).
const (
	EventuallyTimeout    = 30 * time.Second
	PollingInterval      = 100 * time.Millisecond
	ConsistentlyDuration = 2 * time.Second
)

// SetDefaults sets Gomega's Eventually and Consistently defaults to the suites' one default and sends
// controller-runtime's log to GinkgoWriter (shown for failed specs); a suite calls it from init.
func SetDefaults() {
	logf.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter), zap.UseDevMode(true)))
	gomega.SetDefaultEventuallyTimeout(EventuallyTimeout)
	gomega.SetDefaultEventuallyPollingInterval(PollingInterval)
	gomega.SetDefaultConsistentlyDuration(ConsistentlyDuration)
}

// Options says what the API server serves besides the repository's own CRDs.
type Options struct {
	// External also serves config/crd/external: cert-manager, OpenShift Routes, Istio, the Prometheus
	// Operator's monitors, as a cluster offering them does.
	External bool
	// CRDDirs are more CRD directories, relative to the test's package (its testdata fixtures).
	CRDDirs []string
	// CRDs are more CRDs as objects, for APIs whose CRDs a library ships in Go (OLM's, from
	// operator-framework/api).
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Webhooks installs config/webhook as it ships (testutil.WebhookManifests: its kustomize output,
	// matchConditions included); the manager of ManagerOptions serves it.
	Webhooks bool
}

// Env is a running envtest control plane.
type Env struct {
	// Environment is envtest's; its WebhookInstallOptions say where the webhooks are served.
	Environment *envtest.Environment
	// Config is the admin REST config.
	Config *rest.Config
	// Client is a direct client (no cache between a test and the API server) on scheme.Scheme.
	Client client.Client
	// Root is the repository's root directory.
	Root string
	tmp  string
}

// CRDPaths are the CRD directories of the repository at root: config/crd/bases, and with external
// config/crd/external too.
func CRDPaths(root string, external bool) []string {
	paths := []string{filepath.Join(root, "config", "crd", "bases")}
	if external {
		paths = append(paths, filepath.Join(root, "config", "crd", "external"))
	}
	return paths
}

// Start starts the control plane ($KUBEBUILDER_ASSETS names its binaries; `make controlplane` builds
// them) with the CRDs and webhooks opts asks for, and waits until they are served.
func Start(opts Options) (*Env, error) {
	root, err := testutil.FindRepoRoot(".")
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root}
	e.Environment = &envtest.Environment{
		CRDDirectoryPaths:     append(CRDPaths(root, opts.External), opts.CRDDirs...),
		CRDs:                  opts.CRDs,
		ErrorIfCRDPathMissing: true,
	}
	if opts.Webhooks {
		if e.tmp, err = os.MkdirTemp("", "testenv-"); err != nil {
			return nil, err
		}
		path, err := testutil.WebhookManifests(root, e.tmp)
		if err != nil {
			return nil, errors.Join(err, os.RemoveAll(e.tmp))
		}
		e.Environment.WebhookInstallOptions.Paths = []string{path}
	}
	if e.Config, err = e.Environment.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("start envtest (%s=%q; `make controlplane` builds its binaries): %w",
			"KUBEBUILDER_ASSETS", os.Getenv("KUBEBUILDER_ASSETS"), err), e.removeTmp())
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme.Scheme}); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e, nil
}

// Stop stops the control plane and removes what Start wrote.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	return errors.Join(e.Environment.Stop(), e.removeTmp())
}

func (e *Env) removeTmp() error {
	if e.tmp == "" {
		return nil
	}
	return os.RemoveAll(e.tmp)
}

// ManagerOptions are the options every suite's manager runs with: no metrics listener, controller names
// that may repeat (a package may run more than one manager), and every write counted by writes when it is
// not nil. The retry back-off is main.go's default (manager.DefaultRetry).
func ManagerOptions(writes *testutil.WriteCounter) manager.Options {
	opts := manager.Options{Options: ctrl.Options{
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}}
	if writes != nil {
		opts.NewClient = writes.NewClient
	}
	return opts
}

// ManagerOptions are the package's ManagerOptions and, when the Env installed the webhooks, the webhook
// server where the API server calls them.
func (e *Env) ManagerOptions(writes *testutil.WriteCounter) manager.Options {
	opts := ManagerOptions(writes)
	if wio := &e.Environment.WebhookInstallOptions; len(wio.Paths) > 0 {
		opts.WebhookServer = webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		})
	}
	return opts
}

// ClusterRoleUser provisions user (with a client certificate of its own, no groups) bound by a
// ClusterRoleBinding to the ClusterRole of the YAML file rolePath (a generated role such as
// config/rbac/role.yaml, created under its own name unless it exists), and returns its REST config once
// the API server authorizes the role's first rule for it: a process run with the config has exactly the
// role's permissions, as an operator installed with them does.
func (e *Env) ClusterRoleUser(ctx context.Context, user, rolePath string) (*rest.Config, error) {
	data, err := os.ReadFile(rolePath)
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return nil, fmt.Errorf("%s: %w", rolePath, err)
	}
	if len(role.Rules) == 0 {
		return nil, fmt.Errorf("%s: ClusterRole %s has no rules", rolePath, role.Name)
	}
	if err := e.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "testenv-" + user + "-" + role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if err := e.Client.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	u, err := e.Environment.AddUser(envtest.User{Name: user}, &rest.Config{QPS: e.Config.QPS, Burst: e.Config.Burst})
	if err != nil {
		return nil, err
	}
	first := role.Rules[0]
	attrs := &authorizationv1.ResourceAttributes{Verb: first.Verbs[0], Group: first.APIGroups[0], Resource: first.Resources[0]}
	if len(first.ResourceNames) > 0 {
		attrs.Name = first.ResourceNames[0]
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, EventuallyTimeout, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}
		if err := e.Client.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the API server does not authorize %s for %+v of ClusterRole %s: %w", user, *attrs, role.Name, err)
	}
	return u.Config(), nil
}

// Discover is platform.Discover on the Env's API server: the optional APIs it serves.
func (e *Env) Discover() (platform.Capabilities, error) { return platform.Discover(e.Config) }

// RunManager builds the manager through manager.New with groups, as main.go does, and runs it until ctx
// ends; a manager that stops with an error fails the suite. It must run inside a Ginkgo node.
func RunManager(ctx context.Context, cfg *rest.Config, opts manager.Options, caps platform.Capabilities, groups ...manager.Group) ctrl.Manager {
	ginkgo.GinkgoHelper()
	mgr, err := manager.New(cfg, opts, caps, groups...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	go func() {
		defer ginkgo.GinkgoRecover()
		gomega.Expect(mgr.Start(ctx)).To(gomega.Succeed())
	}()
	return mgr
}

// CreateNamespace makes a namespace of its own for a spec or test, named prefix-<random>.
func CreateNamespace(ctx context.Context, c client.Client, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// NewNamespace is CreateNamespace in a Ginkgo spec, failing it on error.
func NewNamespace(c client.Client, prefix string) string {
	ginkgo.GinkgoHelper()
	name, err := CreateNamespace(context.Background(), c, prefix)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return name
}

// Metric is testutil.MetricValue in a Ginkgo spec: the value of family name's series whose labels include
// want, failing the spec on an error or when no series matches.
func Metric(reg prometheus.Gatherer, name string, want map[string]string) float64 {
	ginkgo.GinkgoHelper()
	v, found, err := testutil.MetricValue(reg, name, want)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(found).NotTo(gomega.BeZero(), "no series %s%v", name, want)
	return v
}
