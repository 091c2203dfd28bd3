package homelab

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/authentik"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// Indexes of AuthentikServers by the namespace/name of each dependency they reference.
const (
	authentikDomainIndex   = "homelab.authentikserver.spec.domain"
	authentikDatabaseIndex = "homelab.authentikserver.spec.database"
	authentikRedisIndex    = "homelab.authentikserver.spec.redis"
)

// authentikDependencies are the dependency conditions, in the order Ready reports them.
var authentikDependencies = []string{homelabv1.ConditionDomain, homelabv1.ConditionDatabase, homelabv1.ConditionRedis}

// authentikParts are the part conditions, after the dependencies, in the order Ready reports them.
var authentikParts = []string{homelabv1.ConditionGeneratedSecret, homelabv1.ConditionServerDeployment,
	homelabv1.ConditionWorkerDeployment, homelabv1.ConditionService, homelabv1.ConditionRoute}

// AuthentikServerReconciler runs authentik for each AuthentikServer once its Domain, PostgresDatabase and
// RedisConnection are Ready.
type AuthentikServerReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Capabilities are the optional APIs this cluster serves (Istio, for the route).
	Capabilities platform.Capabilities
	// Image is the image of the pods; authentik.DefaultImage when empty.
	Image string
	// Client reads from the manager's cache and writes to the API server; APIReader reads the generated
	// Secret, of which the cache holds only the metadata. SetupWithManager fills both and Recorder when nil.
	Client    client.Client
	APIReader client.Reader
	// Recorder emits events.
	Recorder record.EventRecorder

	applier *apply.Applier
	status  *reconcile.StatusWriter
}

// authentikServerCache: the children (labelled), and Secrets as metadata (the generated one, to notice it
// deleted).
func authentikServerCache(caps platform.Capabilities) []manager.CacheRule {
	rules := []manager.CacheRule{
		{Object: &appsv1.Deployment{}},
		{Object: &corev1.Service{}},
		{Object: &corev1.Secret{}, Scope: manager.All,
			Why: "Secrets are watched as metadata only; the generated authentik Secret's data is read from the API server"},
	}
	if caps.Istio {
		rules = append(rules, manager.CacheRule{Object: &istio.VirtualService{}})
	}
	return rules
}

// dependencyKey is a reference ("name" or "namespace/name") as the namespace/name it names, seen from
// namespace ns.
func dependencyKey(ref, ns string) types.NamespacedName {
	if before, after, ok := strings.Cut(ref, "/"); ok {
		return types.NamespacedName{Namespace: before, Name: after}
	}
	return types.NamespacedName{Namespace: ns, Name: ref}
}

// SetupWithManager registers the reconciler and the indexes of AuthentikServers by dependency; a
// dependency's change wakes the AuthentikServers that reference it.
func (r *AuthentikServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.applier = &apply.Applier{Client: r.Client, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner}
	r.status = &reconcile.StatusWriter{Client: r.Client, FieldOwner: oplabels.FieldOwner + "/authentikserver",
		Fields: []string{"observedGeneration", "url", "secretName"},
		Conditions: append(append([]string{homelabv1.ConditionReady}, authentikDependencies...),
			authentikParts...)}
	indexer := mgr.GetFieldIndexer()
	for index, ref := range map[string]func(*homelabv1.AuthentikServer) string{
		authentikDomainIndex:   func(a *homelabv1.AuthentikServer) string { return a.Spec.Domain },
		authentikDatabaseIndex: func(a *homelabv1.AuthentikServer) string { return a.Spec.Database },
		authentikRedisIndex:    func(a *homelabv1.AuthentikServer) string { return a.Spec.Redis },
	} {
		if err := indexer.IndexField(context.Background(), &homelabv1.AuthentikServer{}, index, func(o client.Object) []string {
			a := o.(*homelabv1.AuthentikServer)
			return []string{dependencyKey(ref(a), a.Namespace).String()}
		}); err != nil {
			return err
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("authentikserver").
		For(&homelabv1.AuthentikServer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		// A dependency's status turning Ready (or not) is what the AuthentikServer waits for: every change
		// of one maps to the AuthentikServers that reference it, through the indexes.
		Watches(&homelabv1.Domain{}, handler.EnqueueRequestsFromMapFunc(r.dependents(authentikDomainIndex))).
		Watches(&homelabv1.PostgresDatabase{}, handler.EnqueueRequestsFromMapFunc(r.dependents(authentikDatabaseIndex))).
		Watches(&homelabv1.RedisConnection{}, handler.EnqueueRequestsFromMapFunc(r.dependents(authentikRedisIndex))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(authentikForSecret)).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles))
	if r.Capabilities.Istio {
		b = b.Owns(&istio.VirtualService{})
	}
	return b.Complete(opmetrics.Instrument(opmetrics.AuthentikServer, mgr.GetClient(), r))
}

// dependents maps a dependency to the AuthentikServers, in any namespace, that reference it.
func (r *AuthentikServerReconciler) dependents(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}.String()
		reqs, err := reconcile.ListRequests(ctx, r.Client, &homelabv1.AuthentikServerList{}, client.MatchingFields{index: key})
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list AuthentikServers of a dependency", "dependency", key)
		}
		return reqs
	}
}

// authentikForSecret maps a Secret the operator made (the generated one) to the AuthentikServer of its
// instance label, so that deleting it makes a new one. Other kinds' Secrets map to a name that is either
// no AuthentikServer or one whose reconcile then finds nothing to do.
func authentikForSecret(_ context.Context, o client.Object) []ctrl.Request {
	l := o.GetLabels()
	if !oplabels.IsManaged(l) || l[oplabels.InstanceLabel] == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[oplabels.InstanceLabel]}}}
}

// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=authentikservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=authentikservers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=domains;postgresdatabases;redisconnections,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.istio.io,resources=virtualservices,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile checks the dependencies, then makes authentik's parts.
func (r *AuthentikServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	a := &homelabv1.AuthentikServer{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, a, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	if !a.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // owner references hand every child to the garbage collector
	}
	s := r.newAuthentikServerScope(a)
	return reconcile.Finish(ctx, r.status, s, func() *homelabv1.AuthentikServerStatus {
		s.status.ObservedGeneration = a.Generation
		s.Summarize(append(append([]string{}, authentikDependencies...), authentikParts...),
			homelabv1.ReasonReady, "authentik is running at "+s.status.URL)
		return s.status
	},
		r.reconcileDomainDependency, r.reconcileDatabaseDependency, r.reconcileRedisDependency,
		r.reconcileGeneratedSecret, r.reconcileDeployments, r.reconcileService, r.reconcileRoute)
}

// reconcileGeneratedSecret makes the Secret with authentik's secret key and bootstrap credentials once,
// and afterwards only adds a key that is missing: a value, once made, never changes (authentik signs
// sessions with the secret key, and the bootstrap password is the admin's until they change it).
func (r *AuthentikServerReconciler) reconcileGeneratedSecret(ctx context.Context, s *authentikServerScope) (ctrl.Result, error) {
	if s.hold(homelabv1.ConditionGeneratedSecret) {
		s.secretReady = false
		return ctrl.Result{}, nil
	}
	name := authentik.SecretName(s.server)
	var live corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.server.Namespace, Name: name}, &live)
	switch {
	case apierrors.IsNotFound(err):
		data, err := authentik.Generate(nil, rand.Reader)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Client.Create(ctx, authentik.Secret(s.server, data)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil // made meanwhile: read it next time
			}
			s.Set(homelabv1.ConditionGeneratedSecret, metav1.ConditionUnknown, homelabv1.ReasonApplyFailed, err.Error())
			return ctrl.Result{}, fmt.Errorf("create Secret %s: %w", name, err)
		}
		s.Normalf(reconcile.EventCreated,
			"Created Secret %s with a new secret key, bootstrap password and bootstrap token", name)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("read Secret %s: %w", name, err)
	case !metav1.IsControlledBy(&live, s.server):
		msg := fmt.Sprintf("Secret %s already exists and was not made for this AuthentikServer; it is left untouched", name)
		s.Refuse(homelabv1.ConditionGeneratedSecret, homelabv1.ReasonNameConflict, msg)
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
	default:
		missing, err := authentik.Generate(live.Data, rand.Reader)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(missing) > 0 {
			patch := client.MergeFrom(live.DeepCopy())
			if live.Data == nil {
				live.Data = map[string][]byte{}
			}
			keys := make([]string, 0, len(missing))
			for _, k := range authentik.SecretKeys {
				if v, ok := missing[k]; ok {
					live.Data[k] = v
					keys = append(keys, k)
				}
			}
			if err := r.Client.Patch(ctx, &live, patch); err != nil {
				return ctrl.Result{}, fmt.Errorf("add keys to Secret %s: %w", name, err)
			}
			s.Normalf(reconcile.EventUpdated,
				"Added the missing keys %s to Secret %s; the other values are kept", strings.Join(keys, ", "), name)
		}
	}
	s.secretReady = true
	s.status.SecretName = name
	s.Set(homelabv1.ConditionGeneratedSecret, metav1.ConditionTrue, homelabv1.ReasonSecretGenerated,
		fmt.Sprintf("Secret %s holds the secret key, the bootstrap password and the bootstrap token", name))
	return ctrl.Result{}, nil
}

// reconcileDeployments applies the server and the worker.
func (r *AuthentikServerReconciler) reconcileDeployments(ctx context.Context, s *authentikServerScope) (ctrl.Result, error) {
	held := s.hold(homelabv1.ConditionServerDeployment)
	held = s.hold(homelabv1.ConditionWorkerDeployment) || held
	if held {
		return ctrl.Result{}, nil
	}
	if !s.secretReady {
		for _, t := range []string{homelabv1.ConditionServerDeployment, homelabv1.ConditionWorkerDeployment} {
			s.Set(t, metav1.ConditionFalse, homelabv1.ReasonWaitingForDependency, "held until the generated Secret exists")
		}
		return ctrl.Result{}, nil
	}
	in := authentik.Inputs{Image: r.Image, DatabaseSecret: s.databaseSecret, RedisSecret: s.redisSecret}
	var res ctrl.Result
	var errs []error
	for _, d := range []struct {
		cond    string
		desired *appsv1.Deployment
	}{
		{homelabv1.ConditionServerDeployment, authentik.ServerDeployment(s.server, in)},
		{homelabv1.ConditionWorkerDeployment, authentik.WorkerDeployment(s.server, in)},
	} {
		ok, r, err := s.Apply(ctx, d.desired, d.cond)
		res = reconcile.Soonest(res, r)
		if err != nil {
			errs = append(errs, err)
		}
		if !ok {
			continue
		}
		if ready := reconcile.DeploymentReady(d.desired); ready.Ready {
			s.Set(d.cond, metav1.ConditionTrue, homelabv1.ReasonReady, fmt.Sprintf("Deployment %s has an available pod", d.desired.Name))
		} else {
			s.Set(d.cond, metav1.ConditionFalse, homelabv1.ReasonDeploymentPending, fmt.Sprintf("Deployment %s: %s", d.desired.Name, ready.Message))
		}
	}
	return res, errors.Join(errs...)
}

// reconcileService applies the Service in front of the server.
func (r *AuthentikServerReconciler) reconcileService(ctx context.Context, s *authentikServerScope) (ctrl.Result, error) {
	if s.hold(homelabv1.ConditionService) {
		return ctrl.Result{}, nil
	}
	desired := authentik.Service(s.server)
	if ok, res, err := s.Apply(ctx, desired, homelabv1.ConditionService); !ok {
		return res, err
	}
	s.Set(homelabv1.ConditionService, metav1.ConditionTrue, homelabv1.ReasonApplied,
		fmt.Sprintf("Service %s serves port %d", desired.Name, authentik.ServicePort))
	return ctrl.Result{}, nil
}

// reconcileRoute serves authentik.<domain hostname> through the Domain's Gateway.
func (r *AuthentikServerReconciler) reconcileRoute(ctx context.Context, s *authentikServerScope) (ctrl.Result, error) {
	if !r.Capabilities.Istio {
		s.MissingAPI(homelabv1.ConditionRoute, "an AuthentikServer is served through an Istio VirtualService (networking.istio.io/v1), which this cluster does not serve; install Istio, then restart the operator")
		return ctrl.Result{}, nil
	}
	// A Domain that no longer lets this namespace use it (its spec.allowedNamespaces changed) stops
	// serving authentik at once: the route through its Gateway goes, whatever else keeps running.
	if c := meta.FindStatusCondition(*s.Conditions, homelabv1.ConditionDomain); c != nil && c.Reason == homelabv1.ReasonDependencyNotAllowed {
		if err := s.DeleteIfControlled(ctx, &istio.VirtualService{}, authentik.VirtualServiceName(s.server)); err != nil {
			return ctrl.Result{}, err
		}
		s.Set(homelabv1.ConditionRoute, metav1.ConditionFalse, homelabv1.ReasonDependencyNotAllowed, c.Message)
		return ctrl.Result{}, nil
	}
	if s.hold(homelabv1.ConditionRoute) {
		return ctrl.Result{}, nil
	}
	desired := authentik.VirtualService(s.server, s.hostname, s.gateway)
	if ok, res, err := s.Apply(ctx, desired, homelabv1.ConditionRoute); !ok {
		return res, err
	}
	s.Set(homelabv1.ConditionRoute, metav1.ConditionTrue, homelabv1.ReasonApplied,
		fmt.Sprintf("VirtualService %s serves %s through Gateway %s", desired.Name, authentik.Host(s.hostname), s.gateway))
	return ctrl.Result{}, nil
}
