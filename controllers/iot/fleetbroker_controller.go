package iot

import (
	"context"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// fleetBrokerStatusOwner is the field manager of the status the FleetBroker controller writes.
const fleetBrokerStatusOwner = oplabels.FieldOwner + "/fleetbroker"

// FleetBrokerReconciler runs the fleet's NATS servers for each FleetBroker (docs/fleet-broker.md).
type FleetBrokerReconciler struct {
	// Capabilities are the optional APIs this cluster serves (cert-manager for spec.tls).
	Capabilities platform.Capabilities

	// Client reads from the manager's cache and writes to the API server; the manager's when nil, as are
	// APIReader and Recorder.
	Client client.Client
	// APIReader reads Secrets from the API server: the cache holds at most their metadata.
	APIReader client.Reader
	// Recorder emits the events users see with kubectl describe.
	Recorder record.EventRecorder

	applier *apply.Applier
	status  *reconcile.StatusWriter
}

// +kubebuilder:rbac:groups=iot.nationtech.io,resources=fleetbrokers,verbs=get;list;watch
// +kubebuilder:rbac:groups=iot.nationtech.io,resources=fleetbrokers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=iot.nationtech.io,resources=fleetbrokers/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete

// Reconcile brings one FleetBroker's children in line with its spec and records what it found.
func (r *FleetBrokerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &iotv1.FleetBroker{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, b, r.applier.Forget, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	if !b.DeletionTimestamp.IsZero() {
		// Owner references hand the children to the garbage collector; nothing lives outside Kubernetes.
		return ctrl.Result{}, nil
	}
	s := r.newFleetBrokerScope(b)
	return reconcile.Finish(ctx, r.status, s, s.summarize,
		r.reconcileAuthority,
		r.reconcileCertificate,
		r.reconcileConfig,
		r.reconcileServices,
		r.reconcileStatefulSet,
		r.reconcileDisruptionBudget,
	)
}

// SetupWithManager registers the reconciler and its watches.
func (r *FleetBrokerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.init()
	b := ctrl.NewControllerManagedBy(mgr).
		Named("fleetbroker").
		For(&iotv1.FleetBroker{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		// Secrets as metadata only: a change (or a deletion) of a broker's own Secret or of the authority
		// Secret it names wakes it, and the data is read from the API server.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.brokersForSecret)).
		WithOptions(manager.ControllerOptions(mgr, 1))
	if r.Capabilities.CertManager {
		b = b.Owns(&cmv1.Certificate{})
	}
	return b.Complete(r)
}

// init makes the applier and the status writer from Client and APIReader.
func (r *FleetBrokerReconciler) init() {
	r.applier = &apply.Applier{Client: r.Client, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner}
	r.status = &reconcile.StatusWriter{
		Client:     r.Client,
		FieldOwner: fleetBrokerStatusOwner,
		Fields:     []string{"observedGeneration", "readyServers", "clientURL", "operatorCredentialsSecret", "authoritySecret", "replicas"},
		Conditions: append([]string{iotv1.ConditionReady}, fleetBrokerParts...),
	}
}

// brokersForSecret maps a Secret to the brokers in its namespace that made it (their instance label) or
// name it as their authority.
func (r *FleetBrokerReconciler) brokersForSecret(ctx context.Context, o client.Object) []ctrl.Request {
	var reqs []ctrl.Request
	if l := o.GetLabels(); oplabels.IsManaged(l) && l[oplabels.InstanceLabel] != "" {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: l[oplabels.InstanceLabel]}})
	}
	var list iotv1.FleetBrokerList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list fleet brokers for secret", "secret", client.ObjectKeyFromObject(o))
		return reqs
	}
	for i := range list.Items {
		if list.Items[i].Spec.Authority.SecretName == o.GetName() {
			reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// fleetBrokerCache are the kinds the FleetBroker controller reads: its own children (labelled), and
// Secrets as metadata (the authority Secret a user brings carries no label of ours).
func fleetBrokerCache(caps platform.Capabilities) []manager.CacheRule {
	rules := []manager.CacheRule{
		{Object: &appsv1.StatefulSet{}},
		{Object: &corev1.Service{}},
		{Object: &policyv1.PodDisruptionBudget{}},
		{Object: &corev1.Secret{}, Scope: manager.All,
			Why: "a FleetBroker's authority Secret may be the user's; Secrets are watched as metadata and read from the API server"},
	}
	if caps.CertManager {
		rules = append(rules, manager.CacheRule{Object: &cmv1.Certificate{}})
	}
	return rules
}

// brokerRetry is how soon a broker waiting for something outside the operator (an authority Secret a
// user must fix or restore) is looked at again.
const brokerRetry = time.Minute
