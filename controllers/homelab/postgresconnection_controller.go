package homelab

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// connectionSecretIndex indexes PostgresConnections by the name of their Secret.
const connectionSecretIndex = "homelab.postgresconnection.spec.secret"

// Timing of the PostgreSQL controllers.
const (
	// PostgresRecheck is how often a Ready connection or database is checked again: the server changes
	// without Kubernetes seeing it (a password changed, a database dropped by hand). A check that finds
	// nothing to do sends only reads, to the server and to the API server.
	PostgresRecheck = 10 * time.Minute
	// PostgresUnreachableRetry is how soon a server that could not be reached is tried again.
	PostgresUnreachableRetry = 30 * time.Second
)

// PostgresConnectionReconciler checks that the operator can log in to each PostgresConnection's server
// with the privileges it needs.
type PostgresConnectionReconciler struct {
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
}

// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresconnections,verbs=get;list;watch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresconnections/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile reads the connection's Secret, logs in, checks privileges and records what it found.
func (r *PostgresConnectionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &homelabv1.PostgresConnection{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, c, r.status.Forget,
		func(k types.NamespacedName) { postgres.Sessions.Forget(sessionOwner(k.Namespace, k.Name)) }); !found {
		return ctrl.Result{}, err
	}
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // nothing of a connection lives outside the object
	}
	s := r.newPostgresConnectionScope(c)
	return reconcile.Finish(ctx, r.status, s, func() *homelabv1.PostgresConnectionStatus {
		ready := s.Summarize([]string{homelabv1.ConditionSecret, homelabv1.ConditionServer},
			homelabv1.ReasonReady, "the operator logs in with CREATEROLE and CREATEDB")
		if ready.Status == metav1.ConditionTrue && reconcile.Changed(s.Before, homelabv1.ConditionReady, ready.Status, ready.Reason) {
			s.Normal(homelabv1.ReasonConnected, "Logged in to "+s.address+" with the privileges the operator needs")
		}
		return &homelabv1.PostgresConnectionStatus{ObservedGeneration: c.Generation, Conditions: *s.Conditions, ServerVersion: s.version}
	}, r.reconcileSecret, r.reconcileServer)
}

// reconcileSecret reads the Secret the spec names and its settings.
func (r *PostgresConnectionReconciler) reconcileSecret(ctx context.Context, s *postgresConnectionScope) (ctrl.Result, error) {
	settings, err := readConnectionSecret(ctx, r.APIReader, s.conn)
	var secretErr *postgres.SecretError
	switch {
	case apierrors.IsNotFound(err):
		s.Fail(homelabv1.ConditionSecret, homelabv1.ReasonSecretNotFound,
			fmt.Sprintf("Secret %q named by spec.secret does not exist in namespace %q", s.conn.Spec.Secret, s.conn.Namespace))
		return ctrl.Result{}, nil
	case errors.As(err, &secretErr):
		s.Fail(homelabv1.ConditionSecret, homelabv1.ReasonSecretKeyMissing, fmt.Sprintf("Secret %q: %s", s.conn.Spec.Secret, secretErr))
		return ctrl.Result{}, nil
	case err != nil:
		s.Set(homelabv1.ConditionSecret, metav1.ConditionUnknown, homelabv1.ReasonWaitingForDependency, "the Secret could not be read: "+err.Error())
		return ctrl.Result{}, err
	}
	s.settings = &settings
	s.address = fmt.Sprintf("%s:%d", settings.Host, settings.Port)
	s.Set(homelabv1.ConditionSecret, metav1.ConditionTrue, homelabv1.ReasonReady, fmt.Sprintf("Secret %q holds the server's address and credentials", s.conn.Spec.Secret))
	return ctrl.Result{}, nil
}

// reconcileServer logs in and checks the login's privileges.
func (r *PostgresConnectionReconciler) reconcileServer(ctx context.Context, s *postgresConnectionScope) (ctrl.Result, error) {
	if s.settings == nil {
		s.Set(homelabv1.ConditionServer, metav1.ConditionUnknown, homelabv1.ReasonWaitingForDependency, "waiting for a usable Secret")
		return ctrl.Result{}, nil
	}
	admin, err := postgres.Sessions.AcquireWithin(ctx, sessionOwner(s.conn.Namespace, s.conn.Name), *s.settings, s.conn.Spec.SessionBudget())
	if err != nil {
		reason, retry := connectFailure(err)
		s.Fail(homelabv1.ConditionServer, reason, fmt.Sprintf("cannot log in to %s as %q: %v", s.address, s.settings.User, err))
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	defer func() { _ = admin.Close(ctx) }()
	p, err := admin.Privileges(ctx)
	if err != nil {
		s.Fail(homelabv1.ConditionServer, homelabv1.ReasonServerError, fmt.Sprintf("cannot read the privileges of %q on %s: %v", s.settings.User, s.address, err))
		return ctrl.Result{RequeueAfter: reconcile.RefusedRetry}, nil
	}
	s.version = p.ServerVersion
	if !p.Sufficient() {
		s.Fail(homelabv1.ConditionServer, homelabv1.ReasonInsufficientPrivileges,
			fmt.Sprintf("role %q on %s lacks %s (ALTER ROLE %s CREATEROLE CREATEDB)", s.settings.User, s.address, p.Missing(), s.settings.User))
		return ctrl.Result{RequeueAfter: reconcile.RefusedRetry}, nil
	}
	s.Set(homelabv1.ConditionServer, metav1.ConditionTrue, homelabv1.ReasonConnected,
		fmt.Sprintf("logged in to %s (PostgreSQL %s) as %q", s.address, p.ServerVersion, s.settings.User))
	return ctrl.Result{RequeueAfter: PostgresRecheck}, nil
}

// connectFailure is the condition reason for a failed login, and how soon to try again: an unreachable
// server soon, a refused login (which a Secret change retries at once) later. It is the mapping the
// PostgresDatabase provisioner uses (newDatabaseProvisioner: the same retry and the same ServerError for
// any other refusal), so a connection and its databases name a failed login alike.
func connectFailure(err error) (string, time.Duration) {
	return postgres.LoginFailureOf(err, PostgresUnreachableRetry, homelabv1.ReasonServerError)
}

// readConnectionSecret reads a connection's Secret from the API server and its settings.
func readConnectionSecret(ctx context.Context, reader client.Reader, c *homelabv1.PostgresConnection) (postgres.Settings, error) {
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Spec.Secret}, secret); err != nil {
		return postgres.Settings{}, err
	}
	return postgres.SettingsFromSecret(secret.Data)
}

// SetupWithManager registers the reconciler, the index of PostgresConnections by Secret (which the
// PostgresDatabase controller's Secret watch uses too) and the closing of the admin sessions when the
// manager stops.
func (r *PostgresConnectionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.status = &reconcile.StatusWriter{
		Client:     r.Client,
		FieldOwner: oplabels.FieldOwner + "/postgresconnection",
		Fields:     []string{"observedGeneration", "serverVersion"},
		Conditions: []string{homelabv1.ConditionReady, homelabv1.ConditionSecret, homelabv1.ConditionServer},
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &homelabv1.PostgresConnection{}, connectionSecretIndex,
		func(o client.Object) []string { return []string{o.(*homelabv1.PostgresConnection).Spec.Secret} }); err != nil {
		return err
	}
	// The admin sessions kept for connections are closed when the manager stops.
	if err := mgr.Add(crmanager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		postgres.Sessions.CloseIdle()
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("postgresconnection").
		For(&homelabv1.PostgresConnection{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Only Secret metadata is cached: a change bumps resourceVersion, which is all we need to know.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.connectionsForSecret)).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles)).
		Complete(opmetrics.Instrument(opmetrics.PostgresConnection, mgr.GetClient(), r))
}

// connectionsForSecret maps a Secret to the connections in its namespace that read it.
func (r *PostgresConnectionReconciler) connectionsForSecret(ctx context.Context, o client.Object) []ctrl.Request {
	list, err := connectionsUsingSecret(ctx, r.Client, o)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list connections for secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list))
	for _, c := range list {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}

func connectionsUsingSecret(ctx context.Context, c client.Reader, secret client.Object) ([]homelabv1.PostgresConnection, error) {
	var list homelabv1.PostgresConnectionList
	err := c.List(ctx, &list, client.InNamespace(secret.GetNamespace()), client.MatchingFields{connectionSecretIndex: secret.GetName()})
	return list.Items, err
}

// postgresCacheRules: the PostgreSQL controllers read Secrets they did not make (a connection's), so
// every Secret's metadata is cached; their data is read from the API server when needed.
func postgresCacheRules(platform.Capabilities) []manager.CacheRule {
	return []manager.CacheRule{{Object: &corev1.Secret{}, Scope: manager.All,
		Why: "a PostgresConnection's Secret is the user's; only metadata is watched, and the data read from the API server"}}
}

// sessionOwner names a PostgresConnection to postgres.Sessions: its pooled admin sessions are those of
// its current Secret, and a rotated Secret closes the former login's sessions.
func sessionOwner(namespace, name string) string {
	return "PostgresConnection/" + namespace + "/" + name
}
