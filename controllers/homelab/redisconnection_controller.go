package homelab

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/redis"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// redisSecretIndex indexes RedisConnections by the name of their Secret.
const redisSecretIndex = "homelab.redisconnection.spec.secret"

// How soon a RedisConnection is asked for PING again: a healthy server every few minutes (the check is a
// read; an unchanged answer costs no write), an unreachable one sooner, one that refused the credentials
// only when the Secret changes or after a while (a server-side ACL change sends no event).
const (
	redisHealthyRecheck     = 5 * time.Minute
	redisUnreachableRecheck = 30 * time.Second
	redisRefusedRecheck     = 5 * time.Minute
)

// redisConnectionParts are the RedisConnection's part conditions in the order Ready reports them.
var redisConnectionParts = []string{homelabv1.ConditionSecret, homelabv1.ConditionServer}

// RedisConnectionReconciler asks each RedisConnection's server for PING with the credentials of its
// Secret.
type RedisConnectionReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Client reads from the manager's cache and writes to the API server; SetupWithManager fills it,
	// APIReader and Recorder when nil.
	Client client.Client
	// APIReader reads the connection's Secret from the API server: only Secret metadata is cached.
	APIReader client.Reader
	// Recorder emits events.
	Recorder record.EventRecorder

	status *reconcile.StatusWriter
	// ping is redis.Ping; a field so that nothing else is needed to reach a server.
	ping func(context.Context, redis.Settings) (redis.Outcome, error)
}

// redisConnectionCache: RedisConnections read their Secret's metadata from the cache (to notice changes)
// and its data from the API server.
func redisConnectionCache(platform.Capabilities) []manager.CacheRule {
	return []manager.CacheRule{{Object: &corev1.Secret{}, Scope: manager.All,
		Why: "a RedisConnection's Secret is the user's; its metadata says when it changed, its data is read from the API server"}}
}

// SetupWithManager registers the reconciler and the index of RedisConnections by Secret; a change of the
// Secret wakes the connections that name it.
func (r *RedisConnectionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.status = &reconcile.StatusWriter{Client: r.Client, FieldOwner: oplabels.FieldOwner + "/redisconnection",
		Fields:     []string{"observedGeneration", "address"},
		Conditions: append([]string{homelabv1.ConditionReady}, redisConnectionParts...)}
	if r.ping == nil {
		r.ping = redis.Ping
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &homelabv1.RedisConnection{}, redisSecretIndex,
		func(o client.Object) []string { return []string{o.(*homelabv1.RedisConnection).Spec.Secret} }); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("redisconnection").
		For(&homelabv1.RedisConnection{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.connectionsForSecret)).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles)).
		Complete(opmetrics.Instrument(opmetrics.RedisConnection, mgr.GetClient(), r))
}

// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=redisconnections,verbs=get;list;watch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=redisconnections/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile reads the Secret, asks the server for PING and records the answer.
func (r *RedisConnectionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	conn := &homelabv1.RedisConnection{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, conn, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	if !conn.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // nothing of ours to undo: the operator made nothing
	}
	s := r.newRedisConnectionScope(conn)
	return reconcile.Finish(ctx, r.status, s, func() *homelabv1.RedisConnectionStatus {
		s.status.ObservedGeneration = conn.Generation
		s.Summarize(redisConnectionParts, homelabv1.ReasonReady, "the server answers PING")
		return s.status
	}, r.reconcileSecret, r.reconcileServer)
}

// reconcileSecret reads host, port, user and password from the user's Secret.
func (r *RedisConnectionReconciler) reconcileSecret(ctx context.Context, s *redisConnectionScope) (ctrl.Result, error) {
	name := s.conn.Spec.Secret
	var secret corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: s.conn.Namespace, Name: name}, &secret)
	if apierrors.IsNotFound(err) {
		msg := fmt.Sprintf("Secret %q named by spec.secret does not exist in namespace %q", name, s.conn.Namespace)
		s.Fail(homelabv1.ConditionSecret, homelabv1.ReasonSecretNotFound, msg)
		return ctrl.Result{}, nil
	}
	if err != nil {
		s.Set(homelabv1.ConditionSecret, metav1.ConditionUnknown, homelabv1.ReasonSecretNotFound, "the Secret could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read secret: %w", err)
	}
	settings, err := redis.FromSecret(secret.Data)
	if err != nil {
		s.Fail(homelabv1.ConditionSecret, homelabv1.ReasonSecretKeyMissing, fmt.Sprintf("Secret %q: %v", name, err))
		return ctrl.Result{}, nil
	}
	s.settings = &settings
	s.status.Address = settings.Address()
	s.Set(homelabv1.ConditionSecret, metav1.ConditionTrue, homelabv1.ReasonReady, fmt.Sprintf("Secret %q names %s", name, settings.Address()))
	return ctrl.Result{}, nil
}

// reconcileServer asks the server for PING. A server that is down is asked again soon, one that refused
// the credentials later; both are Warning events once, when the condition turns.
func (r *RedisConnectionReconciler) reconcileServer(ctx context.Context, s *redisConnectionScope) (ctrl.Result, error) {
	if s.settings == nil {
		s.Drop(homelabv1.ConditionServer)
		s.status.Address = ""
		return ctrl.Result{}, nil
	}
	outcome, err := r.ping(ctx, *s.settings)
	addr := s.settings.Address()
	switch outcome {
	case redis.OK:
		if reconcile.Changed(s.Before, homelabv1.ConditionServer, metav1.ConditionTrue, homelabv1.ReasonConnected) {
			s.Normalf(homelabv1.ReasonConnected, "Redis at %s answers PING", addr)
		}
		s.Set(homelabv1.ConditionServer, metav1.ConditionTrue, homelabv1.ReasonConnected, fmt.Sprintf("Redis at %s answers PING", addr))
		return ctrl.Result{RequeueAfter: redisHealthyRecheck}, nil
	case redis.AuthenticationFailed:
		s.Fail(homelabv1.ConditionServer, homelabv1.ReasonAuthenticationFailed,
			fmt.Sprintf("Redis at %s refused the Secret's credentials: %v", addr, err))
		return ctrl.Result{RequeueAfter: redisRefusedRecheck}, nil
	case redis.Unreachable:
		s.Fail(homelabv1.ConditionServer, homelabv1.ReasonUnreachable, fmt.Sprintf("Redis at %s: %v", addr, err))
		return ctrl.Result{RequeueAfter: redisUnreachableRecheck}, nil
	default:
		s.Fail(homelabv1.ConditionServer, homelabv1.ReasonServerError, fmt.Sprintf("Redis at %s: %v", addr, err))
		return ctrl.Result{RequeueAfter: redisUnreachableRecheck}, nil
	}
}

// connectionsForSecret maps a Secret to the RedisConnections of its namespace that name it.
func (r *RedisConnectionReconciler) connectionsForSecret(ctx context.Context, o client.Object) []ctrl.Request {
	reqs, err := reconcile.ListRequests(ctx, r.Client, &homelabv1.RedisConnectionList{},
		client.InNamespace(o.GetNamespace()), client.MatchingFields{redisSecretIndex: o.GetName()})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list RedisConnections for a Secret", "secret", client.ObjectKeyFromObject(o))
	}
	return reqs
}
