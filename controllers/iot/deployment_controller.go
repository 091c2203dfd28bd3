package iot

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// statusFieldOwner is the field manager of the status the Deployment controller writes.
const statusFieldOwner = oplabels.FieldOwner + "/iotdeployment"

// Finalizer holds a Deployment until its desired state is purged from NATS, which lives outside
// Kubernetes.
const Finalizer = "iot.nationtech.io/desired-state"

// DefaultStatusInterval is the least time between two status writes of one Deployment caused by device
// state changes.
const DefaultStatusInterval = time.Second

// purgeGiveUp is how long a deleted Deployment waits for NATS to purge its desired state before the
// finalizer is removed anyway (with a Warning event): an unreachable NATS never holds a deletion forever.
const purgeGiveUp = 10 * time.Minute

// DeploymentReconciler publishes desired state for each iot Deployment and folds the fleet's counters
// into its status.
type DeploymentReconciler struct {
	// Store is the fleet's NATS buckets, when the caller connected already (tests).
	Store *store.Store
	// NATS, when Store is nil, is the server the reconciler connects to in the background, retrying until
	// it answers; Deployments say NATSUnavailable meanwhile. With neither, every Deployment says
	// NATSNotConfigured and nothing is published.
	NATS *NATSOptions
	// StatusInterval is the least time between two counter-driven status writes of one Deployment;
	// DefaultStatusInterval when zero.
	StatusInterval time.Duration
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Policy is which devices each namespace may target and which images may run (the operator's
	// --iot-fleet-policy, --iot-allowed-registries, --iot-require-digest); the zero Policy allows no
	// targeting. The webhook refuses what is outside it; the reconciler publishes nothing for it.
	Policy Policy
	// Credentials verify the credential labels devices put in their records (--iot-fleet-account-jwt):
	// the only labels a selector's requirements on a key the namespace's policy names can match. Nil
	// verifies none, so such a namespace targets no device.
	Credentials *auth.Verifier

	// Client reads from the manager's cache and writes to the API server; the manager's when nil, as are
	// APIReader and Recorder.
	Client client.Client
	// APIReader reads the Deployments' ControllerRevisions (their kept scores) from the API server: rare
	// reads, not worth a cache of every ControllerRevision of the cluster.
	APIReader client.Reader
	// Recorder emits the events users see with kubectl describe.
	Recorder record.EventRecorder

	store    atomic.Pointer[store.Store]
	counters fleet.Counters
	index    fleet.Index
	plans    plans
	saved    savedRevisions
	status   *reconcile.StatusWriter
	// finalizer holds a Deployment until its desired state is purged from NATS.
	finalizer reconcile.Finalizer
	wake      chan event.TypedGenericEvent[*iotv1.Deployment]
	// devicesChanged is set by the device watch and cleared by the ticker that wakes every Deployment.
	devicesChanged atomic.Bool
	// reconciles counts finished reconciles (tests wait on it).
	reconciles atomic.Int64
	now        func() time.Time
}

// +kubebuilder:rbac:groups=iot.nationtech.io,resources=deployments,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=iot.nationtech.io,resources=deployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=iot.nationtech.io,resources=deployments/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile publishes one Deployment's desired state to its devices and writes its status.
func (r *DeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	defer r.reconciles.Add(1)
	d := &iotv1.Deployment{}
	forgetFleet := func(k types.NamespacedName) {
		key := fleet.DeploymentKey{Namespace: k.Namespace, Name: k.Name}
		r.index.Forget(key)
		r.plans.forget(key)
	}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, d, r.status.Forget, forgetFleet); !found {
		return ctrl.Result{}, err
	}
	if !d.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, d)
	}
	st := r.store.Load()
	if msgs := r.Policy.Violations(d); len(msgs) > 0 {
		return r.refusePolicy(ctx, d, st, msgs)
	}
	if st != nil && !r.counters.Live() {
		// The counters are still on their first pass over the state bucket; the end of it wakes every
		// Deployment again. A status from half the records would be wrong.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if st != nil {
		// Held from the first publish on: what is published lives in NATS, outside Kubernetes.
		if err := r.finalizer.Ensure(ctx, d); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	s := r.newDeploymentScope(d, st)
	status := func() *iotv1.DeploymentStatus {
		if s.counting {
			return &d.Status // no status from half a count: the live one, which writes nothing
		}
		return s.summarize(r.clock())
	}
	res, err = reconcile.Finish(ctx, r.status, s, status, r.reconcileDesiredState, r.reconcileRevision)
	return reconcile.Soonest(res, s.requeue), err
}

// finalize purges a deleted Deployment's desired state and state records from NATS, then lets it go.
func (r *DeploymentReconciler) finalize(ctx context.Context, d *iotv1.Deployment) (ctrl.Result, error) {
	if !r.finalizer.Has(d) {
		return ctrl.Result{}, nil
	}
	key := fleet.DeploymentKey{Namespace: d.Namespace, Name: d.Name}
	r.saved.forget(d.UID)
	if st := r.store.Load(); st != nil || r.NATS != nil {
		n, err := 0, errors.New("not connected to NATS yet")
		if st != nil {
			r.counters.Forget(key)
			r.index.Forget(key)
			r.plans.forget(key)
			n, err = st.PurgeDeployment(ctx, key)
		}
		if err != nil {
			if r.clock().Sub(d.DeletionTimestamp.Time) < purgeGiveUp {
				return ctrl.Result{RequeueAfter: natsRetry}, nil
			}
			r.session(d).Warnf(iotv1.ReasonNATSUnavailable,
				"gave up purging the desired state from NATS after %s: %v; devices keep running it until an operator purges %s", purgeGiveUp, err, fleet.DesiredDeploymentFilter(key))
		} else if n > 0 {
			r.session(d).Normalf(iotv1.EventWithdrawn, "purged %d desired-state and state records from NATS", n)
		}
	}
	return ctrl.Result{}, r.finalizer.Release(ctx, d)
}

func (r *DeploymentReconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// SetupWithManager registers the reconciler, and with a store the fleet watches: the counters' fold
// over the state bucket, the device registry, and the ticker that turns counter changes into reconciles.
func (r *DeploymentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: Finalizer}
	r.status = &reconcile.StatusWriter{
		Client:     r.Client,
		FieldOwner: statusFieldOwner,
		Fields:     []string{"observedGeneration", "aggregate", "publishedDevices", "lastProgressTime", "recentEvents", "rolledBackTo"},
		Conditions: []string{iotv1.ConditionReady, iotv1.ConditionProgressing, iotv1.ConditionAvailable, iotv1.ConditionPaused},
	}
	r.wake = make(chan event.TypedGenericEvent[*iotv1.Deployment], 1024)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("iotdeployment").
		// Status writes do not change the generation; counter changes arrive through the wake channel.
		For(&iotv1.Deployment{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionPredicate()))).
		WatchesRawSource(source.Channel(r.wake, &handler.TypedEnqueueRequestForObject[*iotv1.Deployment]{})).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles))
	r.index.TrustedKeys = r.Policy.Fleet.TrustedKeys
	switch {
	case r.Store != nil:
		r.trust(mgr.GetLogger(), r.Store)
		r.store.Store(r.Store)
		if err := mgr.Add(&fleetWatch{r: r}); err != nil {
			return err
		}
	case r.NATS != nil:
		if err := mgr.Add(&natsConnector{r: r, reader: mgr.GetAPIReader()}); err != nil {
			return err
		}
	default:
		// No NATS: the Deployments still get their per-Deployment gauges (from status, all zero).
		fleetGauges.reader.Store(&readerBox{r.Client})
	}
	return b.Complete(opmetrics.Instrument(opmetrics.Deployment, mgr.GetClient(), r))
}

// deletionPredicate lets through the update that sets deletionTimestamp (the generation does not change
// for an object with finalizers).
func deletionPredicate() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// wakeUp queues a reconcile of the Deployment named key.
func (r *DeploymentReconciler) wakeUp(ctx context.Context, key types.NamespacedName) {
	d := &iotv1.Deployment{}
	d.Namespace, d.Name = key.Namespace, key.Name
	select {
	case r.wake <- event.TypedGenericEvent[*iotv1.Deployment]{Object: d}:
	case <-ctx.Done():
	}
}

// trust makes st read device records' labels as docs/fleet.md, "Credential labels" says: the
// credential's verified labels over the device's own, each refusal logged.
func (r *DeploymentReconciler) trust(log logr.Logger, st *store.Store) {
	log = log.WithName("fleet")
	st.Trust = r.Credentials.Trust(r.clock, func(device string, err error) {
		log.V(1).Info("a device's credential labels are not trusted", "device", device, "reason", err.Error())
	})
}
