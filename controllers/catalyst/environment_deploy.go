package catalyst

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/apply"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/source"
	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/reconcile"
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

// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps;serviceaccounts;persistentvolumeclaims,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;update;delete

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
		return ctrl.Result{RequeueAfter: fetchRetryFor(s)}, nil
	}
	st := &catalystv1.DeploymentStatus{Commit: in.req.Commit, Type: in.typ, Image: in.Image.Ref(), Digest: in.digest}
	if c := s.status.Deployment; c != nil && c.Type == in.typ {
		st.Inventory, st.Release, st.Revision = c.Inventory, c.Release, c.Revision
	}
	s.status.Deployment = st
	if in.typ == catalystv1.DeploymentHelm {
		return r.deployHelm(ctx, s, in, rd, st)
	}
	return r.deployObjects(ctx, s, in, rd, st)
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
	in := &deployInput{typ: p.Spec.Deployment.Type, req: source.Request{URL: p.Spec.Source.RepositoryURL, Commit: commit, Branch: branch}}
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
		switch in.typ {
		case catalystv1.DeploymentHelm:
			if ch, renderErr = render.Chart(c.Dir, in.Input); renderErr != nil {
				return nil
			}
			objs, renderErr = render.Helm(ch, in.Input)
		case catalystv1.DeploymentKustomize:
			objs, renderErr = render.Kustomize(c.Dir, in.Input)
		default:
			objs, renderErr = render.Manifests(c.Dir, in.Input)
		}
		return nil
	})
	if err != nil {
		fail(catalystv1.ReasonFetchFailed, fmt.Sprintf("commit %s: %v", in.req.Commit, err))
		return nil
	}
	if renderErr != nil {
		fail(catalystv1.ReasonRenderFailed, fmt.Sprintf("commit %s: %v", shortCommit(in.req.Commit), renderErr))
		s.status.Deployment = &catalystv1.DeploymentStatus{Commit: in.req.Commit, Type: in.typ, Image: in.Image.Ref(), Digest: in.digest}
		return nil
	}
	refused := render.Policy{Namespace: in.Namespace, Host: in.Host, Scope: r.scope}.Check(objs)
	if len(refused) > 0 {
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

// deployObjects applies manifest and kustomize objects, then prunes what the previous inventory held
// and this one does not.
func (r *EnvironmentReconciler) deployObjects(ctx context.Context, s *environmentScope, in *deployInput, rd *rendered, st *catalystv1.DeploymentStatus) (ctrl.Result, error) {
	objs := rd.objs
	changed, res, err := r.applyObjects(ctx, s, objs)
	if err != nil || res.RequeueAfter > 0 {
		return res, err
	}
	inventory := make([]catalystv1.DeployedObject, 0, len(objs))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		inventory = append(inventory, catalystv1.DeployedObject{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: o.GetName()})
	}
	pruned, err := r.prune(ctx, s, st.Inventory, inventory)
	st.Inventory, st.Objects = inventory, int32(len(objs))
	if err != nil {
		return ctrl.Result{}, err
	}
	r.deploy.remember(s.env, rd)
	if changed > 0 || pruned > 0 {
		r.Recorder.Eventf(s.env, corev1.EventTypeNormal, catalystv1.EventDeployed, "Deployed commit %s (%s %s): %d objects applied, %d changed, %d pruned",
			shortCommit(in.req.Commit), in.typ, in.Path, len(objs), changed, pruned)
	}
	return r.reportReady(ctx, s, objs)
}

// applyObjects applies each object (reading it first: one that already holds every field is not
// written) and returns how many it wrote.
func (r *EnvironmentReconciler) applyObjects(ctx context.Context, s *environmentScope, objs []*unstructured.Unstructured) (int, ctrl.Result, error) {
	changed := 0
	for _, o := range objs {
		result, err := r.applyObject(ctx, s.env, o)
		var conflict *apply.ConflictError
		var status apierrors.APIStatus
		switch {
		case errors.As(err, &conflict):
			msg := conflict.Error()
			s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, catalystv1.ReasonNameConflict, msg)
			s.Warn(catalystv1.ReasonNameConflict, msg)
			return changed, ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
		case errors.As(err, &status) && (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)):
			msg := fmt.Sprintf("%s was refused by the API server: %v", render.Describe(o), err)
			s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, catalystv1.ReasonApplyFailed, msg)
			s.Warn(catalystv1.ReasonApplyFailed, msg)
			return changed, ctrl.Result{RequeueAfter: reconcile.RefusedRetry}, nil
		case err != nil:
			s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionUnknown, catalystv1.ReasonApplyFailed, err.Error())
			return changed, ctrl.Result{}, err
		}
		if result != apply.Unchanged {
			ctrl.LoggerFrom(ctx).V(1).Info("applied a deployed object", "object", render.Describe(o), "result", result)
			changed++
		}
	}
	return changed, ctrl.Result{}, nil
}

// applyObject applies one deployed object with server-side apply under the operator's field owner,
// unless the live object already holds every field; an object of that name the operator did not make
// is left untouched (apply.ConflictError).
func (r *EnvironmentReconciler) applyObject(ctx context.Context, env *catalystv1.Environment, desired *unstructured.Unstructured) (apply.Result, error) {
	// A copy: ToUnstructured annotates the map it is given, and desired is kept to repair drift with.
	want, err := apply.ToUnstructured(desired.DeepCopy())
	if err != nil {
		return "", err
	}
	live, err := r.readLive(ctx, want.GroupVersionKind(), client.ObjectKeyFromObject(want))
	result := apply.Updated
	switch {
	case apierrors.IsNotFound(err):
		result = apply.Created
	case err != nil:
		return "", err
	default:
		if c := apply.Conflict(live, want, env); c != nil {
			return "", c
		}
		if apply.Contains(live.Object, want.Object) {
			return apply.Unchanged, nil
		}

	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want), client.FieldOwner(manager.FieldOwner), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("apply %s: %w", render.Describe(desired), err)
	}
	return result, nil
}

// readLive reads an object: a watched kind from the cache (it holds what the operator labelled; an
// object it lacks is read from the API server, to not take over someone else's), any other kind from
// the API server, so that no informer is started for a kind a repository happens to hold.
func (r *EnvironmentReconciler) readLive(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
	if typed := watchedObject(gvk, r.Client.Scheme()); typed != nil {
		err := r.Client.Get(ctx, key, typed)
		if err == nil {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				return nil, err
			}
			// The cache's typed objects carry no TypeMeta.
			u := &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(gvk)
			return u, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := r.APIReader.Get(ctx, key, u); err != nil {
		return nil, err
	}
	return u, nil
}

// watchedObject is an empty typed object of gvk when it is a watched kind, else nil.
func watchedObject(gvk schema.GroupVersionKind, scheme *runtime.Scheme) client.Object {
	for _, k := range watchedKinds {
		kgvk, err := apiGVK(k, scheme)
		if err == nil && kgvk == gvk {
			return k.DeepCopyObject().(client.Object)
		}
	}
	return nil
}

func apiGVK(obj client.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", obj, err)
	}
	return gvks[0], nil
}

// prune deletes the objects of the previous inventory the new one does not hold, when they still carry
// the operator's labels for this environment (an object someone else made, or took over by removing the
// labels, is left alone). "Already gone" is success.
func (r *EnvironmentReconciler) prune(ctx context.Context, s *environmentScope, before, now []catalystv1.DeployedObject) (int, error) {
	key := func(o catalystv1.DeployedObject) string { return o.Group + "/" + o.Kind + "/" + o.Name }
	keep := map[string]bool{}
	for _, o := range now {
		keep[key(o)] = true
	}
	pruned := 0
	for _, o := range before {
		if keep[key(o)] {
			continue
		}
		gvk := schema.GroupVersionKind{Group: o.Group, Version: o.Version, Kind: o.Kind}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: o.Name}, live)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		case err != nil:
			return pruned, fmt.Errorf("read %s %s to prune it: %w", o.Kind, o.Name, err)
		}
		if !manager.IsManaged(live.GetLabels()) || live.GetLabels()[DeployLabel] != s.env.Name {
			continue
		}
		err = r.Client.Delete(ctx, live, client.Preconditions{UID: ptrUID(live.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return pruned, fmt.Errorf("prune %s %s: %w", o.Kind, o.Name, err)
		}
		pruned++
		r.Recorder.Eventf(s.env, corev1.EventTypeNormal, catalystv1.EventPruned, "Deleted %s %s: commit %s no longer holds it",
			o.Kind, o.Name, shortCommit(s.status.Deployment.Commit))
	}
	return pruned, nil
}

func ptrUID(u types.UID) *types.UID { return &u }

// keepDeployed keeps an unchanged deploy in place: manifest and kustomize objects that drifted are
// applied again (nothing is written when none did), and a Helm release whose objects went missing is
// upgraded again with the same chart and values.
func (r *EnvironmentReconciler) keepDeployed(ctx context.Context, s *environmentScope, in *deployInput, rd *rendered) (ctrl.Result, error) {
	objs := rd.objs
	if in.typ == catalystv1.DeploymentHelm {
		for _, o := range objs {
			if _, hook := o.GetAnnotations()["helm.sh/hook"]; hook {
				continue // Helm deletes hooks after they ran, as their delete policy says
			}
			if _, err := r.readLive(ctx, o.GroupVersionKind(), client.ObjectKeyFromObject(o)); apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("a deployed object is gone; upgrading the release again", "object", render.Describe(o))
				st := s.status.Deployment.DeepCopy()
				s.status.Deployment = st
				return r.deployHelm(ctx, s, in, rd, st)
			}
		}
		return r.reportReady(ctx, s, objs)
	}
	changed, res, err := r.applyObjects(ctx, s, objs)
	if err != nil || res.RequeueAfter > 0 {
		return res, err
	}
	if changed > 0 {
		r.Recorder.Eventf(s.env, corev1.EventTypeNormal, reconcile.EventUpdated, "Restored %d deployed objects of commit %s that had drifted",
			changed, shortCommit(in.req.Commit))
	}
	r.deploy.remember(s.env, rd)
	return r.reportReady(ctx, s, objs)
}

// reportReady sets DeploymentReady from the deployed Deployments and StatefulSets: True when every one
// is available with its current spec.
func (r *EnvironmentReconciler) reportReady(ctx context.Context, s *environmentScope, objs []*unstructured.Unstructured) (ctrl.Result, error) {
	var waiting []string
	workloads := 0
	for _, o := range objs {
		var ok bool
		var msg string
		key := client.ObjectKeyFromObject(o)
		switch o.GroupVersionKind() {
		case appsv1.SchemeGroupVersion.WithKind("Deployment"):
			d := &appsv1.Deployment{}
			if err := r.readTyped(ctx, key, d); err != nil {
				return ctrl.Result{}, err
			}
			ok, msg = deploymentAvailable(d)
		case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
			ss := &appsv1.StatefulSet{}
			if err := r.readTyped(ctx, key, ss); err != nil {
				return ctrl.Result{}, err
			}
			ok, msg = statefulSetAvailable(ss)
		default:
			continue
		}
		workloads++
		if !ok {
			waiting = append(waiting, o.GetKind()+" "+o.GetName()+": "+msg)
		}
	}
	commit := shortCommit(s.status.Deployment.Commit)
	if len(waiting) > 0 {
		slices.Sort(waiting)
		s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionFalse, catalystv1.ReasonProgressing,
			fmt.Sprintf("commit %s deployed; waiting for %s", commit, strings.Join(waiting, "; ")))
		if s.status.Deployment.Type == catalystv1.DeploymentHelm {
			// Helm labels what it installs managed-by Helm, so the cache does not see it: poll.
			return ctrl.Result{RequeueAfter: helmPoll}, nil
		}
		return ctrl.Result{}, nil
	}
	s.Set(catalystv1.ConditionDeploymentReady, metav1.ConditionTrue, catalystv1.ReasonReady,
		fmt.Sprintf("commit %s deployed (%s); %d Deployments and StatefulSets available", commit, s.status.Deployment.Type, workloads))
	return ctrl.Result{}, nil
}

// readTyped reads a workload from the cache, or from the API server when the cache lacks it (Helm's
// objects carry Helm's managed-by label, not the operator's).
func (r *EnvironmentReconciler) readTyped(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	return err
}

func deploymentAvailable(d *appsv1.Deployment) (bool, string) {
	st := d.Status
	return rolledOut(d.Spec.Replicas, d.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.AvailableReplicas)
}

func statefulSetAvailable(ss *appsv1.StatefulSet) (bool, string) {
	st := ss.Status
	return rolledOut(ss.Spec.Replicas, ss.Generation, st.ObservedGeneration, st.UpdatedReplicas, st.AvailableReplicas)
}

// rolledOut is whether a workload's controller has rolled out its current spec to every replica (one when
// replicas is unset) and each is available, or what it still waits for.
func rolledOut(replicas *int32, generation, observed int64, updated, available int32) (bool, string) {
	want := int32(1)
	if replicas != nil {
		want = *replicas
	}
	switch {
	case observed < generation:
		return false, "its controller has not seen the new spec yet"
	case updated < want:
		return false, fmt.Sprintf("%d of %d replicas updated", updated, want)
	case available < want:
		return false, fmt.Sprintf("%d of %d replicas available", available, want)
	}
	return true, ""
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
