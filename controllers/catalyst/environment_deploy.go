package catalyst

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	"github.com/platform-operator/platform-operator/internal/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/metrics"
)

// DeployLabel marks every object the operator deployed from an environment's repository, with the
// Environment's name: with the operator's managed-by label it is what pruning requires before deleting.
const DeployLabel = "catalyst.dev/deployed-by"

// DefaultHelmMaxHistory is how many revisions of a release Helm keeps when DeployConfig says nothing.
const DefaultHelmMaxHistory = 5

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

// deployer is the Environment reconciler's deploy state: the fetcher, the cluster's kinds, and the last
// rendered objects of each environment, with which drift is repaired without fetching or rendering again.
type deployer struct {
	fetcher    *source.Fetcher
	restConfig *rest.Config
	mapper     meta.RESTMapper
	maxHistory int

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
func (d *deployer) remembered(env *catalystv1.Environment, digest string) *rendered {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.rendered[client.ObjectKeyFromObject(env)]; ok && r.uid == env.UID && r.digest == digest {
		return r
	}
	return nil
}

func (d *deployer) remember(env *catalystv1.Environment, r *rendered) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rendered == nil {
		d.rendered = map[types.NamespacedName]*rendered{}
	}
	r.uid = env.UID
	d.rendered[client.ObjectKeyFromObject(env)] = r
}

// forget drops a deleted Environment's rendered objects.
func (d *deployer) forget(key types.NamespacedName) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.rendered, key)
}

// watchedKinds are the kinds of deployed objects the reconciler watches (by the operator's label): a
// change to one repairs drift, and the workloads' status makes DeploymentReady.
var watchedKinds = []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}}

// The operator only reads what it deployed (the watched kinds, to repair drift and report readiness):
// everything a repository holds is written, read and deleted as the tenant (environment_tenant.go).
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch

// setupDeploy makes the deploy state and adds the watches on deployed objects to b.
func (r *EnvironmentReconciler) setupDeploy(mgr ctrl.Manager, b *builder.Builder) *builder.Builder {
	r.deploy = &deployer{
		fetcher: &source.Fetcher{Dir: r.Deploy.CacheDir, MaxEntries: r.Deploy.CacheEntries, CABundle: r.Deploy.GitCABundle,
			Hosts: r.Deploy.GitHosts},
		restConfig: mgr.GetConfig(),
		mapper:     mgr.GetRESTMapper(),
		maxHistory: r.Deploy.HelmMaxHistory,
	}
	if r.deploy.maxHistory <= 0 {
		r.deploy.maxHistory = DefaultHelmMaxHistory
	}
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

// deployInput is everything a deploy is made of, and its digest.
type deployInput struct {
	render.Input
	typ    catalystv1.DeploymentType
	req    source.Request
	digest string
}

// reconcileDeploy deploys the environment's application at spec.source.commitSha once its image is in
// the registry: a Helm release, or manifests or a kustomization applied with server-side apply and
// pruned. While what the deploy is made of is unchanged (status.deployment.digest) nothing is fetched,
// rendered or written; drift in the deployed objects is repaired from the objects rendered last.
func (r *EnvironmentReconciler) reconcileDeploy(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	switch {
	case s.project == nil || s.namespace == "":
		s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, catalystv1.ReasonWaiting, "waiting for the namespace")
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
		rd := r.deploy.remembered(s.env, in.digest)
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
		opmetrics.DeployFinished(string(in.typ), false)
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
	opmetrics.DeployFinished(string(in.typ), err == nil && !deployRefused(s))
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

// renderTimeout bounds one render: a chart or kustomization that takes longer (a template looping over a
// huge range) fails its Environment with RenderFailed instead of holding a worker.
const renderTimeout = 2 * time.Minute

// renderWithin renders the checkout at dir, giving up after timeout. Neither Helm's engine nor kustomize
// can be interrupted, so a render that overruns is left to finish in the background (its result is
// dropped); the worker goes on.
func renderWithin(timeout time.Duration, dir string, in *deployInput) ([]*unstructured.Unstructured, *chart.Chart, error) {
	type result struct {
		objs []*unstructured.Unstructured
		ch   *chart.Chart
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		switch in.typ {
		case catalystv1.DeploymentHelm:
			if r.ch, r.err = render.Chart(dir, in.Input); r.err == nil {
				r.objs, r.err = render.Helm(r.ch, in.Input)
			}
		case catalystv1.DeploymentKustomize:
			r.objs, r.err = render.Kustomize(dir, in.Input)
		default:
			r.objs, r.err = render.Manifests(dir, in.Input)
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r.objs, r.ch, r.err
	case <-time.After(timeout):
		return nil, nil, fmt.Errorf("rendering took longer than %s", timeout)
	}
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

// deployInput gathers what the deploy is made of; nil (with the condition set) when the git
// credentials cannot be read.
func (r *EnvironmentReconciler) deployInput(ctx context.Context, s *environmentScope) (*deployInput, error) {
	p := s.project
	commit := s.env.Spec.Source.CommitSHA
	branch := s.env.Spec.Source.Branch
	if branch == "" {
		branch = p.Spec.Source.Branch
	}
	in := &deployInput{typ: p.Spec.Deployment.Type, req: source.Request{URL: p.Spec.Source.RepositoryURL, Commit: commit, Branch: branch, Namespace: p.Namespace}}
	if ref := p.Spec.Source.SecretRef; ref != nil {
		auth, err := r.gitAuth(ctx, p.Namespace, ref.Name)
		if err != nil {
			var user *userError
			if errors.As(err, &user) {
				s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, catalystv1.ReasonSecretInvalid, user.msg)
				s.Warn(catalystv1.ReasonSecretInvalid, user.msg)
				return nil, nil
			}
			return nil, err
		}
		in.req.Auth = auth
	}
	repo, tag, _ := strings.Cut(s.image, ":")
	if i := strings.LastIndex(s.image, ":"); i > strings.LastIndex(s.image, "/") {
		repo, tag = s.image[:i], s.image[i+1:]
	}
	var values map[string]any
	if v := p.Spec.Deployment.Values; v != nil && len(v.Raw) > 0 {
		if err := json.Unmarshal(v.Raw, &values); err != nil {
			return nil, fmt.Errorf("project %s/%s deployment.values: %w", p.Namespace, p.Name, err)
		}
	}
	in.Input = render.Input{
		Path:      p.Spec.Deployment.Path,
		Namespace: s.namespace,
		Release:   s.env.Name,
		Image:     render.Image{Repository: repo, Tag: tag, Digest: s.imageDigest},
		Host:      catalyst.Host(s.namespace, s.settings.Domain),
		Values:    values,
		Labels:    deployLabels(s.env),
		// An administrator's choice, not the tenant's.
		AllowRemoteBases: r.Deploy.AllowRemoteBases,
	}
	for _, e := range s.env.Spec.Config.EnvVars {
		v := render.EnvVar{Name: e.Name, Value: e.Value}
		if e.SecretKeyRef != nil {
			v = render.EnvVar{Name: e.Name, Secret: e.SecretKeyRef.Name, Key: e.SecretKeyRef.Key}
		}
		in.Env = append(in.Env, v)
	}
	sum := sha256.New()
	// Everything the objects are made of; the Secret's values are not (a Secret-valued env var is only a
	// reference), and neither are the git credentials (they change no content).
	_ = json.NewEncoder(sum).Encode([]any{in.req.URL, in.req.Commit, in.req.Branch, in.typ, in.Input})
	in.digest = hex.EncodeToString(sum.Sum(nil)[:12])
	return in, nil
}

// deployLabels are the labels on every deployed object.
func deployLabels(env *catalystv1.Environment) map[string]string {
	return map[string]string{
		manager.ManagedByLabel: manager.OperatorName,
		manager.PartOfLabel:    manager.OperatorName,
		DeployLabel:            env.Name,
	}
}

// userError is a mistake only the user fixes, with the message to show.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

// gitAuth reads the Project's git credentials Secret: token, or username and password.
func (r *EnvironmentReconciler) gitAuth(ctx context.Context, ns, name string) (*source.Auth, error) {
	sec := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &userError{fmt.Sprintf("Secret %s/%s named by the Project's spec.source.secretRef does not exist", ns, name)}
		}
		return nil, fmt.Errorf("read git credentials %s/%s: %w", ns, name, err)
	}
	if t := sec.Data["token"]; len(t) > 0 {
		return &source.Auth{Username: source.TokenUser, Password: string(t)}, nil
	}
	if u, p := sec.Data["username"], sec.Data["password"]; len(u) > 0 && len(p) > 0 {
		return &source.Auth{Username: string(u), Password: string(p)}, nil
	}
	return nil, &userError{fmt.Sprintf("Secret %s/%s named by the Project's spec.source.secretRef holds neither token nor username and password", ns, name)}
}

// render fetches the commit and renders the deploy, refusing what leaves the namespace. It returns nil
// when it could not (the condition says why); report says whether failures are also reported with
// events (a first attempt) or only as conditions.
func (r *EnvironmentReconciler) render(ctx context.Context, s *environmentScope, in *deployInput, report bool) *rendered {
	fail := func(reason, msg string) {
		s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, reason, msg)
		if report {
			s.Warn(reason, msg)
		}
	}
	var objs []*unstructured.Unstructured
	var ch *chart.Chart
	var renderErr error
	err := r.deploy.fetcher.With(ctx, in.req, func(c source.Checkout) error {
		in.req.Commit = c.Commit
		objs, ch, renderErr = renderWithin(renderTimeout, c.Dir, in)
		return nil
	})
	if err != nil {
		fail(catalystv1.ReasonFetchFailed, fmt.Sprintf("commit %s: %v", in.req.Commit, err))
		return nil
	}
	if renderErr != nil {
		var remote *render.RemoteRefusedError
		if report && errors.As(renderErr, &remote) {
			opmetrics.Refused(opmetrics.RefusalPolicy)
		}
		fail(catalystv1.ReasonRenderFailed, fmt.Sprintf("commit %s: %v", shortCommit(in.req.Commit), renderErr))
		s.status.Deployment = &catalystv1.DeploymentStatus{Commit: in.req.Commit, Type: in.typ, Image: in.Image.Ref(), Digest: in.digest}
		return nil
	}
	refused := r.policy(in).Check(objs)
	if len(refused) > 0 {
		if report {
			opmetrics.Refused(opmetrics.RefusalPolicy)
		}
		shown := refused
		if len(shown) > 32 {
			shown = shown[:32]
		}
		fail(catalystv1.ReasonObjectsRefused, fmt.Sprintf("commit %s holds objects outside the environment's namespace %s; nothing was deployed: %s",
			shortCommit(in.req.Commit), in.Namespace, strings.Join(shown, ", ")))
		s.status.Deployment = &catalystv1.DeploymentStatus{Commit: in.req.Commit, Type: in.typ, Image: in.Image.Ref(), Digest: in.digest, Refused: shown}
		return nil
	}
	render.Sort(objs)
	return &rendered{digest: in.digest, objs: objs, chart: ch}
}

// policy is what a deploy of in may hold (render.Policy): the environment's namespace, names under its
// host, and the ClusterIssuers the operator allows.
func (r *EnvironmentReconciler) policy(in *deployInput) render.Policy {
	issuers := append([]string{}, r.Defaults.AllowedClusterIssuers...)
	if r.Defaults.Issuer.Name != "" && (r.Defaults.Issuer.Kind == "" || r.Defaults.Issuer.Kind == "ClusterIssuer") {
		issuers = append(issuers, r.Defaults.Issuer.Name)
	}
	return render.Policy{Namespace: in.Namespace, Host: in.Host, Scope: r.scope, ClusterIssuers: issuers}
}

// firstRefusals is at most the first 32 refusals, for the status.
func firstRefusals(refused []string) []string {
	if len(refused) > 32 {
		return refused[:32]
	}
	return refused
}

// scope asks the cluster whether a kind is namespaced.
func (r *EnvironmentReconciler) scope(gvk schema.GroupVersionKind) (bool, error) {
	m, err := r.deploy.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
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
