package homelab

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
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

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/controllers/internal/pgrestore"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/restoresource"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/ownimage"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// databaseConnectionIndex indexes PostgresDatabases by their connection, as "namespace/name".
const databaseConnectionIndex = "homelab.postgresdatabase.spec.connection"

// Event reasons of a PostgresDatabase besides the kit's Created, Updated and Deleted.
const (
	// EventPasswordRotated is a new password set on the role and written to the Secret.
	EventPasswordRotated = "PasswordRotated"
	// EventRetained is a deleted PostgresDatabase whose database and role stay (reclaimPolicy Retain).
	EventRetained = "Retained"
)

// postgresDatabaseKind is the owner kind of the Secret a PostgresDatabase gets (postgres.Secret).
var postgresDatabaseKind = homelabv1.GroupVersion.WithKind("PostgresDatabase")

// postgresDatabaseParts are the PostgresDatabase's part conditions, in the order Ready reports them.
// Cleanup, present only while a deleted object waits, comes first: it is what the user must act on then.
var postgresDatabaseParts = []string{homelabv1.ConditionCleanup, homelabv1.ConditionConnection, homelabv1.ConditionDatabase, homelabv1.ConditionCredentials}

// PostgresDatabaseReconciler makes, for each PostgresDatabase, a role and a database on its connection's
// server and a Secret with the role's credentials, and drops them when it is deleted.
type PostgresDatabaseReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Client reads from the manager's cache and writes to the API server; SetupWithManager fills it,
	// APIReader and Recorder when nil.
	Client client.Client
	// APIReader reads Secrets from the API server: only their metadata is cached.
	APIReader client.Reader
	// Recorder emits events.
	Recorder record.EventRecorder
	// CleanupTimeout bounds how long a deleted PostgresDatabase waits for its database to be dropped;
	// postgres.DefaultCleanupTimeout when zero.
	CleanupTimeout time.Duration
	// OperatorImage is the operator's own image, which a restore Job's init container runs; when empty it
	// is read from the operator's own pod (PodNamespace, PodName), and restores wait (OperatorImageUnknown)
	// while neither is known.
	OperatorImage string
	// PodNamespace and PodName are the operator's own pod (POD_NAMESPACE, POD_NAME).
	PodNamespace, PodName string
	// PostgresImage is pg_restore's image template, with %d for the server's major version (the backup
	// group's --backup-postgres-image).
	PostgresImage string
	// Capabilities are the optional APIs this cluster serves, discovered at start-up: without the backup
	// API (Backups), no Backup is watched or read, and status.lastBackup stays empty.
	Capabilities platform.Capabilities

	applier *apply.Applier
	status  *reconcile.StatusWriter
	// restorer runs spec.restore (postgresdatabase_restore.go).
	restorer *pgrestore.Restorer
	// secrets reads Secrets from the API server (see SetupWithManager).
	secrets apply.ReadThrough
	// db makes and drops the databases.
	db *postgres.Provisioner
	// finalizer holds a PostgresDatabase until its database is dropped or let go.
	finalizer reconcile.Finalizer
}

// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresdatabases,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresdatabases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresdatabases/finalizers,verbs=update
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=postgresconnections,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// A restore (postgresdatabase_restore.go): its Job, ConfigMap and credentials Secret, the failed pod's
// termination message, and the namespace's Backups and BackupStores it reads from. The Backups are read
// for status.lastBackup too (lastbackup.Find).
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backups;backupstores,verbs=get;list;watch

// Reconcile brings one PostgresDatabase's role, database and Secret in line with its spec, or cleans up
// after a deleted one.
func (r *PostgresDatabaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	db := &homelabv1.PostgresDatabase{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, db, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	s := r.newPostgresDatabaseScope(db)
	if !db.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	status := func() *homelabv1.PostgresDatabaseStatus {
		s.Drop(homelabv1.ConditionCleanup) // a deleted object's part only
		return s.summarize()
	}
	res, err := reconcile.Finish(ctx, r.status, s, status, r.reconcileConnection, r.reconcileDatabase, r.reconcileRestore, r.reconcileSecret, r.observeLastBackup)
	if err == nil && meta.IsStatusConditionTrue(*s.Conditions, homelabv1.ConditionReady) {
		res = reconcile.Soonest(res, ctrl.Result{RequeueAfter: PostgresRecheck})
	}
	return res, err
}

// wait records a part that waits for an earlier one, without an event.
func (s *postgresDatabaseScope) wait(condType, msg string) {
	s.Set(condType, metav1.ConditionUnknown, homelabv1.ReasonWaitingForDependency, msg)
}

// summarize is the status this reconcile found.
func (s *postgresDatabaseScope) summarize() *homelabv1.PostgresDatabaseStatus {
	parts := postgresDatabaseParts
	if s.db.Spec.Restore != nil {
		parts = []string{homelabv1.ConditionCleanup, homelabv1.ConditionConnection, homelabv1.ConditionDatabase,
			homelabv1.ConditionRestored, homelabv1.ConditionCredentials}
	}
	s.Summarize(parts, homelabv1.ReasonReady,
		fmt.Sprintf("database %s and its role are ready; credentials in Secret %s", s.name, s.secretName))
	status := &homelabv1.PostgresDatabaseStatus{
		ObservedGeneration: s.db.Generation, Conditions: *s.Conditions,
		DatabaseName: s.name, SecretName: s.secretName, RestoredFrom: (*homelabv1.RestoredFrom)(s.restoredFrom),
	}
	status.LastBackupTime, status.LastBackup = s.lastBackup.Fields()
	return status
}

// observeLastBackup finds the database's newest Completed Backup in the cache, for status.lastBackup
// (docs/backup.md). Without the backup API there is none; a failed read keeps what the status shows.
func (r *PostgresDatabaseReconciler) observeLastBackup(ctx context.Context, s *postgresDatabaseScope) (ctrl.Result, error) {
	last, err := lastbackup.Observe(ctx, r.Client, r.Capabilities.Backups, backupv1.SourcePostgresDatabase, s.db.Namespace, s.db.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.lastBackup = last
	return ctrl.Result{}, nil
}

// connectionKey is the "namespace/name" of db's connection.
func connectionKey(db *homelabv1.PostgresDatabase) types.NamespacedName {
	ns, name, err := postgres.ParseRef(db.Spec.Connection, db.Namespace)
	if err != nil { // admission allows only name and namespace/name
		return types.NamespacedName{Namespace: db.Namespace, Name: db.Spec.Connection}
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}

// resolveConnection finds db's connection and its settings: the connection must exist, be Ready for its
// current generation and let db's namespace use it. It says why not otherwise (a condition reason and
// message).
func (r *PostgresDatabaseReconciler) resolveConnection(ctx context.Context, db *homelabv1.PostgresDatabase) (*homelabv1.PostgresConnection, *postgres.Settings, string, string, error) {
	key := connectionKey(db)
	conn := &homelabv1.PostgresConnection{}
	if err := r.Client.Get(ctx, key, conn); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, homelabv1.ReasonMissingDependency, fmt.Sprintf("PostgresConnection %s not found", key), nil
		}
		return nil, nil, homelabv1.ReasonWaitingForDependency, "", err
	}
	if !postgres.NamespaceAllowed(conn.Namespace, db.Namespace, conn.Spec.AllowedNamespaces) {
		return conn, nil, homelabv1.ReasonNotAllowed, fmt.Sprintf("PostgresConnection %s does not list namespace %q in spec.allowedNamespaces", key, db.Namespace), nil
	}
	ready := meta.FindStatusCondition(conn.Status.Conditions, homelabv1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != conn.Generation {
		msg := fmt.Sprintf("waiting for PostgresConnection %s to be ready", key)
		if ready != nil && ready.Status == metav1.ConditionFalse {
			msg += fmt.Sprintf(" (%s: %s)", ready.Reason, ready.Message)
		}
		return conn, nil, homelabv1.ReasonWaitingForDependency, msg, nil
	}
	settings, err := readConnectionSecret(ctx, r.APIReader, conn)
	if err != nil {
		// The connection was Ready with it a moment ago: it changed, and the connection will say so.
		return conn, nil, homelabv1.ReasonWaitingForDependency, fmt.Sprintf("the Secret of PostgresConnection %s cannot be used: %v", key, err), nil
	}
	return conn, &settings, "", "", nil
}

// reconcileConnection finds the connection the database lives on.
func (r *PostgresDatabaseReconciler) reconcileConnection(ctx context.Context, s *postgresDatabaseScope) (ctrl.Result, error) {
	conn, settings, reason, msg, err := r.resolveConnection(ctx, s.db)
	if err != nil {
		s.wait(homelabv1.ConditionConnection, "the connection could not be read: "+err.Error())
		return ctrl.Result{}, err
	}
	s.conn = conn
	if settings == nil {
		// The connection's own changes wake this database (watch through databaseConnectionIndex).
		status := metav1.ConditionFalse
		if reason == homelabv1.ReasonWaitingForDependency {
			s.Set(homelabv1.ConditionConnection, status, reason, msg)
			return ctrl.Result{}, nil
		}
		s.Fail(homelabv1.ConditionConnection, reason, msg)
		return ctrl.Result{}, nil
	}
	s.settings = settings
	s.Set(homelabv1.ConditionConnection, metav1.ConditionTrue, homelabv1.ReasonReady,
		fmt.Sprintf("PostgresConnection %s/%s is ready", conn.Namespace, conn.Name))
	return ctrl.Result{}, nil
}

// reconcileDatabase decides the password (the Secret's, or a new one when there is none or a rotation is
// asked for) and makes the server hold the role and database.
func (r *PostgresDatabaseReconciler) reconcileDatabase(ctx context.Context, s *postgresDatabaseScope) (ctrl.Result, error) {
	if s.settings == nil {
		s.wait(homelabv1.ConditionDatabase, "waiting for the connection")
		return ctrl.Result{}, nil
	}
	secretName := postgres.SecretName(s.db.Name)
	if restorePending(s.db) {
		// Until the restore succeeded the password lives in the restore Job's Secret only.
		secretName = jobs.RestoreSecretName(s.db)
	}
	live := &corev1.Secret{}
	switch err := r.secrets.Get(ctx, types.NamespacedName{Namespace: s.db.Namespace, Name: secretName}, live); {
	case apierrors.IsNotFound(err):
		// None yet, or deleted: a new password.
	case err != nil:
		s.wait(homelabv1.ConditionDatabase, "the Secret could not be read: "+err.Error())
		return ctrl.Result{}, err
	case restorePending(s.db):
		if jobs.IsRestoreSecret(s.db, live) {
			s.secretLive = live
		}
	default:
		if c := apply.Conflict(live, postgres.Secret(s.db, postgresDatabaseKind, *s.settings, s.name, "", ""), s.db); c != nil {
			s.Fail(homelabv1.ConditionCredentials, reconcile.ReasonNameConflict, c.Error())
			s.wait(homelabv1.ConditionDatabase, "waiting for the Secret's name to be free")
			return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
		}
		s.secretLive = live
	}

	// Before anything exists on the server, and only then: a database whose connection never became
	// Ready made nothing there, and is deleted without waiting for a server.
	if err := r.finalizer.Ensure(ctx, s.db); err != nil {
		s.wait(homelabv1.ConditionDatabase, "the finalizer could not be added: "+err.Error())
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	res, err := r.db.Ensure(ctx, postgres.Request{UID: s.db.UID, Admin: *s.settings, SessionOwner: sessionOwner(s.conn.Namespace, s.conn.Name),
		MaxSessions: s.conn.Spec.SessionBudget(), Name: s.name, Owner: s.owner, Live: s.secretLive, Rotation: s.rotation})
	if err != nil {
		return ctrl.Result{}, err
	}
	if res.Updated != "" {
		s.Normal(reconcile.EventUpdated, res.Updated)
	}
	if !res.Ready() {
		s.Fail(homelabv1.ConditionDatabase, res.Reason, res.Message)
		return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
	}
	s.password, s.newPassword = res.Login.Password, res.NewPassword
	s.Set(homelabv1.ConditionDatabase, metav1.ConditionTrue, homelabv1.ReasonReady, res.Message)
	return ctrl.Result{}, nil
}

// reconcileSecret writes the role's credentials to the Secret <name>-postgres.
func (r *PostgresDatabaseReconciler) reconcileSecret(ctx context.Context, s *postgresDatabaseScope) (ctrl.Result, error) {
	if s.db.Spec.Restore != nil && s.restoredFrom == nil {
		// Handed to the workload only once restored: an application must never see the empty database.
		s.wait(homelabv1.ConditionCredentials, "waiting for the restore")
		return ctrl.Result{}, nil
	}
	if s.password == "" {
		// The Secret of an earlier reconcile still serves applications while the database waits: keep
		// naming it while it exists (its metadata is cached).
		name := postgres.SecretName(s.db.Name)
		live := &metav1.PartialObjectMetadata{}
		live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.db.Namespace, Name: name}, live); err == nil && oplabels.IsManaged(live.Labels) && live.Labels[oplabels.InstanceLabel] == s.db.Name {
			s.secretName = name
		}
		if c := meta.FindStatusCondition(*s.Conditions, homelabv1.ConditionCredentials); c == nil || c.Reason != reconcile.ReasonNameConflict {
			s.wait(homelabv1.ConditionCredentials, "waiting for the database")
		}
		return ctrl.Result{}, nil
	}
	desired := postgres.Secret(s.db, postgresDatabaseKind, *s.settings, s.name, s.password, s.rotation)
	if s.secretLive != nil && s.secretLive.Name == desired.Name && apply.Holds(s.secretLive, desired) {
		// Unchanged, as read at the start of this reconcile: no apply, which would write the password back
		// into a Secret deleted since (a deleted Secret asks for a new password, in the next reconcile).
		s.secretName = desired.Name
		s.Set(homelabv1.ConditionCredentials, metav1.ConditionTrue, homelabv1.ReasonReady,
			fmt.Sprintf("Secret %s holds host, port, user, password, database and url", desired.Name))
		return ctrl.Result{}, nil
	}
	applied, res, err := s.Apply(ctx, desired, homelabv1.ConditionCredentials)
	if !applied {
		return res, err
	}
	s.secretName = desired.Name
	if s.newPassword && s.secretLive != nil {
		s.Normalf(EventPasswordRotated, "Set a new password on role %s and in Secret %s", s.name, desired.Name)
	}
	s.Set(homelabv1.ConditionCredentials, metav1.ConditionTrue, homelabv1.ReasonReady,
		fmt.Sprintf("Secret %s holds host, port, user, password, database and url", desired.Name))
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler and the index of PostgresDatabases by connection; a
// connection's change, and a change of a Secret a connection or database reads, wake the databases.
func (r *PostgresDatabaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.db = newDatabaseProvisioner(r.CleanupTimeout)
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: homelabv1.PostgresDatabaseFinalizer}
	// The applier reads Secrets from the API server: a typed read through the cache would start an
	// informer holding every Secret's data.
	r.secrets = apply.ReadThrough{Client: r.Client, Reader: r.APIReader}
	r.applier = &apply.Applier{Client: r.secrets, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner}
	r.restorer = &pgrestore.Restorer{Client: r.Client, APIReader: r.APIReader, Applier: r.applier, PostgresImage: r.PostgresImage,
		OwnImage:      &ownimage.Resolver{Image: r.OperatorImage, Reader: r.APIReader, Namespace: r.PodNamespace, Name: r.PodName},
		BackupsServed: r.Capabilities.Backups}
	r.status = &reconcile.StatusWriter{
		Client:     r.Client,
		FieldOwner: oplabels.FieldOwner + "/postgresdatabase",
		Fields:     []string{"observedGeneration", "databaseName", "secretName", "restoredFrom", "lastBackupTime", "lastBackup"},
		Conditions: append([]string{homelabv1.ConditionReady, homelabv1.ConditionRestored}, postgresDatabaseParts...),
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &homelabv1.PostgresDatabase{}, databaseConnectionIndex,
		func(o client.Object) []string {
			return []string{connectionKey(o.(*homelabv1.PostgresDatabase)).String()}
		}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("postgresdatabase").
		// Status writes change neither generation nor annotations; the rotate and release annotations do.
		For(&homelabv1.PostgresDatabase{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&homelabv1.PostgresConnection{}, handler.EnqueueRequestsFromMapFunc(r.databasesForConnection)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.databasesForSecret)).
		// A restore's Job.
		Owns(&batchv1.Job{}).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles))
	if r.Capabilities.Backups {
		// The Backups and stores a restore waits for, and the database's own Backups for its last backup.
		var err error
		if b, err = restoresource.Watch(mgr, b, databaseRestores); err != nil {
			return err
		}
	}
	return b.Complete(opmetrics.Instrument(opmetrics.PostgresDatabase, mgr.GetClient(), r))
}

// databasesForConnection maps a connection to the databases that use it, in any namespace.
func (r *PostgresDatabaseReconciler) databasesForConnection(ctx context.Context, o client.Object) []ctrl.Request {
	reqs, err := reconcile.ListRequests(ctx, r.Client, &homelabv1.PostgresDatabaseList{},
		client.MatchingFields{databaseConnectionIndex: client.ObjectKeyFromObject(o).String()})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list databases for connection", "connection", client.ObjectKeyFromObject(o))
	}
	return reqs
}

// databasesForSecret maps a database's own Secret (labelled, since the Secret cache may keep no owner
// references) to the database, and a connection's Secret to the databases using that connection.
func (r *PostgresDatabaseReconciler) databasesForSecret(ctx context.Context, o client.Object) []ctrl.Request {
	if l := o.GetLabels(); oplabels.IsManaged(l) && l[oplabels.InstanceLabel] != "" {
		if o.GetName() == postgres.SecretName(l[oplabels.InstanceLabel]) {
			return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[oplabels.InstanceLabel]}}}
		}
		return nil
	}
	conns, err := connectionsUsingSecret(ctx, r.Client, o)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list connections for secret", "secret", client.ObjectKeyFromObject(o))
		return nil
	}
	var reqs []ctrl.Request
	for i := range conns {
		reqs = append(reqs, r.databasesForConnection(ctx, &conns[i])...)
	}
	return reqs
}
