package catalyst

import (
	"context"
	"strings"
	"sync"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// EnvironmentReconciler gives each Environment a namespace of its own, locked down with a quota, limits and
// a network policy, and an https Ingress; and deletes the namespace with the Environment. Its reconcile
// then runs two more phases as steps, the build (buildPhase: the image) and the deploy (deployPhase: the
// application), each setting its own part of the status, sums up every part in Ready and the phase, and
// writes the status once.
type EnvironmentReconciler struct {
	// Defaults are what an environment gets when its Project says nothing.
	Defaults catalyst.Defaults
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Capabilities are the optional APIs this cluster serves (cert-manager).
	Capabilities platform.Capabilities
	// Build is the operator's build settings: the builder image and the plain-http registries.
	Build catalyst.BuildConfig
	// Pods reads failed build pods' logs; SetupWithManager makes one from the manager's config when nil.
	Pods corev1client.PodsGetter
	// Deploy is the operator's deploy settings: git CAs, the checkout cache, Helm's history.
	Deploy DeployConfig
	// Now is the clock previews expire by (spec.expireAfter); time.Now when nil.
	Now func() time.Time

	// Client reads from the manager's cache and writes to the API server; APIReader reads what the cache
	// does not hold (namespaces the operator did not make). SetupWithManager fills both and Recorder.
	Client    client.Client
	APIReader client.Reader
	// Recorder emits the events users see with kubectl describe.
	Recorder record.EventRecorder

	applier   *apply.Applier
	finalizer reconcile.Finalizer
	// status writes the whole status, the build's and the deploy's parts included, once per reconcile.
	status *reconcile.StatusWriter
	// build and deploy are the reconcile's last two phases, with what they keep across reconciles.
	build  *buildPhase
	deploy *deployPhase
	// policies keeps the admission policies of the environment namespaces (environment_tenant.go).
	policies *admissionPolicies
	// announced remembers, per Environment, the UID, generation and URL its last Ready event was for: a
	// reconcile that reads the Environment from the cache before the status write that made it Ready has
	// reached it must not announce it twice.
	announced sync.Map
	// expiries remembers, per Environment, the expiry computed for its UID and generation (expiryMark):
	// a reconcile that reads the Environment before the status write recording it reached the cache
	// must not compute it again, a second later.
	expiries sync.Map
}

// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments/finalizers,verbs=update
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies;ingresses,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile brings one Environment's namespace and what it holds in line with the Environment and its
// Project, or deletes the namespace of a deleted Environment.
func (r *EnvironmentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	env := &catalystv1.Environment{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, env, r.status.Forget, r.deploy.forget,
		func(k types.NamespacedName) { r.announced.Delete(k) }, func(k types.NamespacedName) { r.expiries.Delete(k) }); !found {
		return ctrl.Result{}, err
	}
	if !env.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, env)
	}
	// The namespace lives outside the Environment's namespace, so only a finalizer gets it deleted.
	if err := r.finalizer.Ensure(ctx, env); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	s := r.newEnvironmentScope(env)
	// The build and the deploy phases set their parts of the status; Finish writes it once, after the
	// summary, so Ready and the parts it sums up are written together.
	return reconcile.Finish(ctx, r.status, s, s.summarize,
		r.reconcileExpiry,
		r.reconcileProject,
		r.reconcileNamespace,
		r.reconcileIngress,
		r.build.reconcileBuild,
		r.deploy.reconcileDeploy,
	)
}

// SetupWithManager registers the reconciler and its watches.
func (r *EnvironmentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.applier = &apply.Applier{Client: r.Client, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner}
	for _, k := range metadataChildren {
		gvk, err := apiutil.GVKForObject(k, mgr.GetScheme())
		if err != nil {
			return err
		}
		r.applier.Metadata = append(r.applier.Metadata, gvk.GroupKind())
	}
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: catalystv1.Finalizer}
	r.status = newStatusWriter(r.Client)
	var err error
	if r.build, err = newBuildPhase(mgr, r); err != nil {
		return err
	}
	r.deploy = newDeployPhase(mgr, r)
	if r.policies, err = newAdmissionPolicies(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}); err != nil {
		return err
	}
	if err := mgr.Add(r.policies); err != nil {
		return err
	}
	toOwner := handler.EnqueueRequestsFromMapFunc(r.environmentForChild)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("environment").
		// Status writes do not change the generation; label changes (which name the namespace) and the
		// deletion timestamp do not either, but must wake the reconciler.
		For(&catalystv1.Environment{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, deletionStarted, retryBuildChanged))).
		Watches(&catalystv1.Project{}, handler.EnqueueRequestsFromMapFunc(r.environmentsForProject),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(environmentForNamespace)).
		Watches(&corev1.ResourceQuota{}, toOwner).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(environmentForNamespace)).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles))
	// The children only ever applied are watched as metadata (metadataChildren).
	for _, k := range metadataChildren {
		b = b.WatchesMetadata(k, toOwner)
	}
	if r.Capabilities.CertManager {
		b = b.Watches(&cmv1.Certificate{}, toOwner)
	}
	b = r.watchDeployed(b)
	return b.Complete(opmetrics.Instrument(opmetrics.Environment, mgr.GetClient(), r))
}

// deletionStarted passes the update that sets an object's deletion timestamp.
var deletionStarted = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}

// environmentForNamespace maps a namespace the operator made to its Environment, by its owner annotation.
func environmentForNamespace(_ context.Context, o client.Object) []ctrl.Request {
	if !oplabels.IsManaged(o.GetLabels()) {
		return nil
	}
	ns, name, ok := strings.Cut(o.GetAnnotations()[catalyst.OwnerAnnotation], "/")
	if !ok || ns == "" || name == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// environmentForChild maps an object in an environment's namespace to the Environment, through the
// namespace's owner annotation.
func (r *EnvironmentReconciler) environmentForChild(ctx context.Context, o client.Object) []ctrl.Request {
	if !oplabels.IsManaged(o.GetLabels()) {
		return nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: o.GetNamespace()}, ns); err != nil {
		return nil
	}
	return environmentForNamespace(ctx, ns)
}

// environmentsForProject maps a Project to the Environments that refer to it.
func (r *EnvironmentReconciler) environmentsForProject(ctx context.Context, o client.Object) []ctrl.Request {
	return environmentsOf(ctx, r.Client, o.GetNamespace()+"/"+o.GetName())
}

// environmentsOf lists, from the cache, the Environments of the Project namespace/name as requests.
func environmentsOf(ctx context.Context, c client.Reader, key string) []ctrl.Request {
	reqs, err := reconcile.ListRequests(ctx, c, &catalystv1.EnvironmentList{}, client.MatchingFields{projectIndex: key})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list environments of project", "project", key)
	}
	return reqs
}
