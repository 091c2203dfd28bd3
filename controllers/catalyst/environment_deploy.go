package catalyst

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/source"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
)

// DeployLabel marks every object the operator deployed from an environment's repository, with the
// Environment's name: with the operator's managed-by label it is what pruning requires before deleting.
const DeployLabel = "catalyst.dev/deployed-by"

// DefaultHelmMaxHistory is how many revisions of a release Helm keeps when DeployConfig says nothing.
const DefaultHelmMaxHistory = 5

// DefaultConcurrentRenders is how many renders run at once when DeployConfig says nothing.
const DefaultConcurrentRenders = 2

// fetchRetry is how soon a commit that could not be fetched is tried again.
const fetchRetry = time.Minute

// helmPoll is how often a Helm release's workloads are read while they are not available yet.
const helmPoll = 5 * time.Second

// DeployConfig is the operator's deploy settings.
type DeployConfig struct {
	// GitCABundle is PEM certificates trusted for https Git servers besides the system's
	// (--catalyst-git-ca-file).
	GitCABundle []byte
	// GitHosts, when not empty, are the only Git hosts the operator fetches from (--catalyst-git-hosts).
	GitHosts []string
	// CacheDir keeps the fetched commits; a directory under the system's temporary directory when empty.
	CacheDir string
	// CacheEntries bounds how many commits CacheDir keeps; source.DefaultEntries when zero.
	CacheEntries int
	// CacheBytes is the Git cache's byte budget (--catalyst-git-cache-bytes);
	// source.DefaultMaxCacheBytes when zero.
	CacheBytes int64
	// Render bounds each render (--catalyst-render-max-bytes, --catalyst-render-memory,
	// --catalyst-render-timeout); render's defaults where zero.
	Render render.Limits
	// MaxConcurrentRenders is how many renders run at once (--catalyst-max-concurrent-renders);
	// DefaultConcurrentRenders when zero.
	MaxConcurrentRenders int
	// HelmMaxHistory bounds each release's history; DefaultHelmMaxHistory when zero.
	HelmMaxHistory int
	// TenantClusterRole is the ClusterRole bound to each environment namespace's tenant ServiceAccount,
	// which every object of a repository is sent as (--catalyst-tenant-cluster-role);
	// catalyst.DefaultTenantClusterRole when empty.
	TenantClusterRole string
	// AllowRemoteBases lets kustomizations name remote bases and resources, which the operator then
	// fetches itself (--catalyst-allow-remote-bases); refused when false.
	AllowRemoteBases bool
}

// deployPhase is the Environment reconcile's last phase: once the build phase found the image, it deploys
// the Environment's application, a Helm release, or manifests or a kustomization applied as the tenant and
// pruned. It sets status.deployment and DeploymentReady (deployFields, deployConditions), which the
// Environment reconciler writes with the rest of the status, once, at the end of the reconcile. It keeps,
// across reconciles, the fetcher, the cluster's kinds, and the last rendered objects of each environment,
// with which drift is repaired without fetching or rendering again.
type deployPhase struct {
	// Defaults are the operator's defaults: the ClusterIssuers a deploy may name.
	Defaults catalyst.Defaults
	// Deploy is the operator's deploy settings: git CAs, the checkout cache, Helm's history.
	Deploy DeployConfig
	// Client reads from the cache; APIReader reads the git credentials Secret.
	Client    client.Client
	APIReader client.Reader

	fetcher    *source.Fetcher
	restConfig *rest.Config
	mapper     meta.RESTMapper
	maxHistory int
	// renders holds a slot per render under way (DeployConfig.MaxConcurrentRenders).
	renders chan struct{}

	mu       sync.Mutex
	rendered map[types.NamespacedName]*rendered
}

// rendered is one environment's deploy as rendered: its objects, and the chart for type helm.
type rendered struct {
	uid    types.UID
	digest string
	objs   []*unstructured.Unstructured
	chart  *chart.Chart
}

// remembered is the environment's last rendered deploy when it was rendered from digest.
func (r *deployPhase) remembered(env *catalystv1.Environment, digest string) *rendered {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rd, ok := r.rendered[client.ObjectKeyFromObject(env)]; ok && rd.uid == env.UID && rd.digest == digest {
		return rd
	}
	return nil
}

// remember keeps rd as the environment's last rendered deploy.
func (r *deployPhase) remember(env *catalystv1.Environment, rd *rendered) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rendered == nil {
		r.rendered = map[types.NamespacedName]*rendered{}
	}
	rd.uid = env.UID
	r.rendered[client.ObjectKeyFromObject(env)] = rd
}

// forget drops a deleted Environment's rendered objects.
func (r *deployPhase) forget(key types.NamespacedName) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.rendered, key)
}

// watchedKinds are the kinds of deployed objects the reconciler watches (by the operator's label): a
// change to one repairs drift, and the workloads' status makes DeploymentReady.
var watchedKinds = []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}}

// The operator only reads what it deployed (the watched kinds, to repair drift and report readiness):
// everything a repository holds is written, read and deleted as the tenant (environment_tenant.go).
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch

// newDeployPhase makes the deploy phase of r.
func newDeployPhase(mgr ctrl.Manager, r *EnvironmentReconciler) *deployPhase {
	d := &deployPhase{Defaults: r.Defaults, Deploy: r.Deploy, Client: r.Client, APIReader: r.APIReader,
		fetcher: &source.Fetcher{Dir: r.Deploy.CacheDir, MaxEntries: r.Deploy.CacheEntries, CABundle: r.Deploy.GitCABundle,
			Hosts: r.Deploy.GitHosts, MaxCacheBytes: r.Deploy.CacheBytes},
		restConfig: mgr.GetConfig(),
		mapper:     mgr.GetRESTMapper(),
		maxHistory: r.Deploy.HelmMaxHistory,
	}
	if d.maxHistory <= 0 {
		d.maxHistory = DefaultHelmMaxHistory
	}
	renders := r.Deploy.MaxConcurrentRenders
	if renders <= 0 {
		renders = DefaultConcurrentRenders
	}
	d.renders = make(chan struct{}, renders)
	return d
}

// watchDeployed adds to b the watches on deployed objects: a change to one repairs drift, and the
// workloads' status makes DeploymentReady.
func (r *EnvironmentReconciler) watchDeployed(b *builder.Builder) *builder.Builder {
	toOwner := handler.EnqueueRequestsFromMapFunc(r.environmentForChild)
	for _, k := range watchedKinds {
		b = b.Watches(k, toOwner)
	}
	return b
}

// deployCacheRules are the cache rules for the deployed kinds: only what carries the operator's label.
func deployCacheRules() []manager.CacheRule {
	rules := make([]manager.CacheRule, 0, len(watchedKinds))
	for _, k := range watchedKinds {
		rules = append(rules, manager.CacheRule{Object: k})
	}
	return rules
}

// reconcileDeploy deploys the environment's application at spec.source.commitSha once its image is in
// the registry: a Helm release, or manifests or a kustomization applied with server-side apply and
// pruned. While what the deploy is made of is unchanged (status.deployment.digest) nothing is fetched,
// rendered or written; drift in the deployed objects is repaired from the objects rendered last.
func (r *deployPhase) reconcileDeploy(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	switch {
	case s.waiting(catalystv1.ConditionDeploymentReady):
		return ctrl.Result{}, nil
	case s.image == "":
		s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, catalystv1.ReasonWaitingForImage,
			"waiting for the image of spec.source.commitSha to be in the registry (see BuildReady)")
		return ctrl.Result{}, nil
	}
	tenant, err := r.tenantClient(s.namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.tenant = tenant
	in, err := r.deployInput(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if in == nil {
		return ctrl.Result{}, nil
	}
	prev := s.env.Status.Deployment
	if prev != nil && prev.Digest == in.digest {
		if c := meta.FindStatusCondition(s.env.Status.Conditions, catalystv1.ConditionDeploymentReady); c != nil && deployFailed[c.Reason] {
			// The same inputs failed before: only a change (commit, image, values, env) tries again.
			s.Set(c.Type, c.Status, c.Reason, c.Message)
			return ctrl.Result{}, nil
		}
		rd := r.remembered(s.env, in.digest)
		if rd == nil {
			// The operator restarted: render again (reads only) to know what to keep in place.
			if rd = r.render(ctx, s, in, false); rd == nil {
				return ctrl.Result{RequeueAfter: fetchRetryFor(s)}, nil
			}
		}
		return r.keepDeployed(ctx, s, in, rd)
	}

	rd := r.render(ctx, s, in, true)
	if rd == nil {
		instruments.DeployFinished(string(in.typ), false)
		return ctrl.Result{RequeueAfter: fetchRetryFor(s)}, nil
	}
	st := &catalystv1.DeploymentStatus{Commit: in.req.Commit, Type: in.typ, Image: in.Image.Ref(), Digest: in.digest}
	if c := s.status.Deployment; c != nil && c.Type == in.typ {
		st.Inventory, st.Release, st.Revision = c.Inventory, c.Release, c.Revision
	}
	s.status.Deployment = st
	var res ctrl.Result
	if in.typ == catalystv1.DeploymentHelm {
		res, err = r.deployHelm(ctx, s, in, rd, st)
	} else {
		res, err = r.deployObjects(ctx, s, in, rd, st)
	}
	instruments.DeployFinished(string(in.typ), err == nil && !deployRefused(s))
	return res, err
}

// deployRefused says whether the deploy step just ended with the commit refused or failed (the
// DeploymentReady reasons of a deploy that sent nothing or not everything).
func deployRefused(s *environmentScope) bool {
	c := meta.FindStatusCondition(s.status.Conditions, catalystv1.ConditionDeploymentReady)
	if c == nil {
		return false
	}
	switch c.Reason {
	case catalystv1.ReasonApplyFailed, catalystv1.ReasonNameConflict, catalystv1.ReasonHelmFailed, catalystv1.ReasonObjectsRefused:
		return true
	}
	return false
}

// fetchRetryFor is the retry of a step that could not fetch or render: none for a render failure (the
// inputs must change), fetchRetry for a fetch.
func fetchRetryFor(s *environmentScope) time.Duration {
	if c := meta.FindStatusCondition(s.status.Conditions, catalystv1.ConditionDeploymentReady); c != nil && c.Reason == catalystv1.ReasonFetchFailed {
		return fetchRetry
	}
	return 0
}

// deployFailed are the DeploymentReady reasons of inputs that failed for good: not tried again until
// they change.
var deployFailed = map[string]bool{
	catalystv1.ReasonRenderFailed:   true,
	catalystv1.ReasonObjectsRefused: true,
	catalystv1.ReasonHelmFailed:     true,
}

// DeployConfigFromFlags makes the deploy settings from the operator's flags: a comma-separated host list
// and the path of a PEM file of CAs (both may be empty).
func DeployConfigFromFlags(hosts, caFile string) (DeployConfig, error) {
	var c DeployConfig
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.GitHosts = append(c.GitHosts, h)
		}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return c, fmt.Errorf("--catalyst-git-ca-file: %w", err)
		}
		c.GitCABundle = pem
	}
	return c, nil
}
