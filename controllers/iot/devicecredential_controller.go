package iot

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// DeviceCredentialFinalizer holds a DeviceCredential until its credentials are revoked in the broker's
// account: the credentials live on a device, outside Kubernetes.
const DeviceCredentialFinalizer = "iot.nationtech.io/revoke-credentials"

// CredsKey is the key of the credentials (a .creds file) in a DeviceCredential's Secret.
const CredsKey = "device.creds"

// credentialAppName is the app.kubernetes.io/name of a DeviceCredential's Secret.
const credentialAppName = "device-credential"

// DefaultRevokeGiveUp is how long a deleted DeviceCredential waits for its revocation (the broker's
// authority Secret and servers reachable) before its finalizer is released anyway, with a Warning.
const DefaultRevokeGiveUp = 10 * time.Minute

// credentialBrokerRetry is how soon a DeviceCredential waiting for its broker (or revoking) tries again.
const credentialBrokerRetry = 10 * time.Second

// DeviceCredentialReconciler issues a device's credentials from its FleetBroker's authority into a
// Secret, and revokes them in the broker's account (pushed to the running servers) on deletion or
// spec.revoked.
type DeviceCredentialReconciler struct {
	// Brokers finds the FleetBroker a DeviceCredential names; nil finds none (every DeviceCredential
	// says BrokerNotFound).
	Brokers Brokers
	// RevokeGiveUp is how long a deletion waits for the revocation; DefaultRevokeGiveUp when zero.
	RevokeGiveUp time.Duration

	// Client reads DeviceCredentials from the manager's cache and writes to the API server; APIReader
	// reads Secrets from the API server (the cache holds no Secret data). The manager's when nil, as is
	// Recorder.
	Client    client.Client
	APIReader client.Reader
	Recorder  record.EventRecorder

	status    *reconcile.StatusWriter
	finalizer reconcile.Finalizer
	now       func() time.Time
	// beforePush, when set, runs before each push of an account JWT revoking key (tests order races).
	beforePush func(key string)
	// reconciles counts finished reconciles (tests wait on it).
	reconciles atomic.Int64
}

// +kubebuilder:rbac:groups=iot.nationtech.io,resources=devicecredentials,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=iot.nationtech.io,resources=devicecredentials/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=iot.nationtech.io,resources=devicecredentials/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile issues one DeviceCredential's credentials, or revokes them.
func (r *DeviceCredentialReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer r.reconciles.Add(1)
	dc := &iotv1.DeviceCredential{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, dc, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	if !dc.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, dc)
	}
	s := r.newDeviceCredentialScope(dc)
	status := func() *iotv1.DeviceCredentialStatus {
		s.status.ObservedGeneration = dc.Generation
		return s.status
	}
	res, err := reconcile.Finish(ctx, r.status, s, status, r.reconcileCredentials, r.reconcileRevocation)
	return reconcile.Soonest(res, s.requeue), err
}

func (r *DeviceCredentialReconciler) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// deviceCredentialCache: a DeviceCredential's Secret is the operator's (labelled), watched as metadata
// to notice its deletion; its data is read from the API server.
func deviceCredentialCache(platform.Capabilities) []manager.CacheRule {
	return []manager.CacheRule{{Object: &corev1.Secret{}, Scope: manager.Managed}}
}

// SetupWithManager registers the reconciler; a change of a credentials Secret wakes its
// DeviceCredential.
func (r *DeviceCredentialReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	if r.Brokers == nil {
		r.Brokers = fleetBrokers{reader: mgr.GetAPIReader()}
	}
	if r.RevokeGiveUp == 0 {
		r.RevokeGiveUp = DefaultRevokeGiveUp
	}
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: DeviceCredentialFinalizer}
	r.status = &reconcile.StatusWriter{
		Client:     r.Client,
		FieldOwner: oplabels.FieldOwner + "/iotdevicecredential",
		Fields:     []string{"observedGeneration", "secretName", "userKey", "issuedAt", "expiresAt", "revokedAt"},
		Conditions: []string{iotv1.ConditionReady, iotv1.ConditionRevoked},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("iotdevicecredential").
		For(&iotv1.DeviceCredential{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionPredicate()))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(credentialForSecret)).
		WithOptions(manager.ControllerOptions(mgr, 2)).
		Complete(r)
}

// credentialForSecret is the DeviceCredential a credentials Secret belongs to, by its instance label
// (the Secret's cached metadata may be cut down to its identity and these labels).
func credentialForSecret(_ context.Context, o client.Object) []ctrlreconcile.Request {
	l := o.GetLabels()
	if !oplabels.IsManaged(l) || l[oplabels.InstanceLabel] == "" {
		return nil
	}
	return []ctrlreconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: l[oplabels.InstanceLabel]}}}
}

// session is a reconcile session about dc alone, for the events of its deletion.
func (r *DeviceCredentialReconciler) session(dc *iotv1.DeviceCredential) *reconcile.Session {
	return &reconcile.Session{Owner: dc, Conditions: &dc.Status.Conditions, Client: r.Client, Recorder: r.Recorder}
}

// finalize revokes a deleted DeviceCredential's credentials, then lets it go; after RevokeGiveUp of
// failures it lets it go anyway, with a Warning.
func (r *DeviceCredentialReconciler) finalize(ctx context.Context, dc *iotv1.DeviceCredential) (ctrl.Result, error) {
	if !r.finalizer.Has(dc) {
		return ctrl.Result{}, nil
	}
	key, err := r.issuedKey(ctx, dc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if key != "" && !revokedAlready(dc) {
		servers, err := r.revoke(ctx, dc, key)
		switch {
		case err != nil && r.clock().Sub(dc.DeletionTimestamp.Time) < r.RevokeGiveUp:
			ctrl.LoggerFrom(ctx).Info("revoking a deleted DeviceCredential's credentials failed; retrying", "error", err.Error())
			left := r.RevokeGiveUp - r.clock().Sub(dc.DeletionTimestamp.Time)
			return ctrl.Result{RequeueAfter: min(credentialBrokerRetry, left+time.Second)}, nil
		case err != nil:
			r.session(dc).Warnf(iotv1.EventRevocationAbandoned,
				"gave up revoking the credentials of device %s (user %s) after %s: %v; revoke them by hand (fleet-auth revoke) or replace the broker's authority",
				dc.Spec.DeviceID, key, r.RevokeGiveUp, err)
		default:
			r.session(dc).Normalf(iotv1.EventRevoked, "revoked the credentials of device %s (user %s); servers told: %v", dc.Spec.DeviceID, key, servers)
		}
	}
	return ctrl.Result{}, r.finalizer.Release(ctx, dc)
}

// revokedAlready says whether dc's status says its credentials were revoked (spec.revoked did it).
func revokedAlready(dc *iotv1.DeviceCredential) bool {
	return dc.Status.RevokedAt != nil && !reconcile.Changed(dc.Status.Conditions, iotv1.ConditionRevoked, metav1.ConditionTrue, iotv1.ReasonRevoked)
}
