package irc

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/controllers/internal/pgrestore"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/monitoring"
	"github.com/platform-operator/platform-operator/internal/kit/ownimage"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// sojuSecretIndex indexes SojuBouncers by the Secrets they read, as "namespace/name": the admin
// connection (their own or the operator-wide default) and the first admin user's password.
const sojuSecretIndex = "irc.sojubouncer.secrets"

// sojuStatusFieldOwner is the field manager of the status the SojuBouncer controller writes.
const sojuStatusFieldOwner = oplabels.FieldOwner + "/sojubouncer"

// DefaultCleanupTimeout is how long a deleted SojuBouncer waits for its database to be dropped before
// the operator gives up, leaves the database on the server and lets the bouncer go.
const DefaultCleanupTimeout = postgres.DefaultCleanupTimeout

// DatabaseRetry is how soon a database server that could not be reached is tried again.
const DatabaseRetry = 30 * time.Second

// SojuBouncerReconciler runs the soju IRC bouncer for each SojuBouncer, on a PostgreSQL database it
// makes for it.
type SojuBouncerReconciler struct {
	// Image is the soju image; soju.DefaultImage when empty.
	Image string
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// DefaultAdminSecret is the operator-wide admin connection Secret (--soju-database-secret), used by
	// bouncers without spec.database.adminSecretName; zero when there is none.
	DefaultAdminSecret types.NamespacedName
	// DefaultAdminNamespaces are the namespaces besides DefaultAdminSecret's own whose bouncers may use it
	// (--soju-database-namespaces); postgres.AllNamespaces allows all. Empty: its own namespace only.
	DefaultAdminNamespaces []string
	// CleanupTimeout bounds how long a deleted bouncer waits for its database to be dropped;
	// DefaultCleanupTimeout when zero.
	CleanupTimeout time.Duration

	// Client reads from the manager's cache and writes to the API server; SetupWithManager takes the
	// manager's when it is nil, as are APIReader and Recorder.
	Client client.Client
	// APIReader reads Secrets straight from the API server: the cache holds only their metadata.
	APIReader client.Reader
	// Recorder emits the events users see with kubectl describe.
	Recorder record.EventRecorder
	// Capabilities are the optional APIs this cluster serves, discovered at start-up: without the backup
	// API (Backups), no Backup is watched or read and a restore is refused (APINotAvailable).
	Capabilities platform.Capabilities
	// OperatorImage is the operator's own image, which a restore Job's init container runs; when empty it
	// is read from the operator's own pod (PodNamespace, PodName), and restores wait (OperatorImageUnknown)
	// while neither is known.
	OperatorImage string
	// PodNamespace and PodName are the operator's own pod (POD_NAMESPACE, POD_NAME).
	PodNamespace, PodName string
	// PostgresImage is pg_restore's image template, with %d for the server's major version (the backup
	// group's --backup-postgres-image).
	PostgresImage string

	applier *apply.Applier
	status  *reconcile.StatusWriter
	// db makes and drops the bouncers' databases.
	db *postgres.Provisioner
	// finalizer holds a bouncer until its database is dropped or let go.
	finalizer reconcile.Finalizer
	// restorer runs spec.restore (sojubouncer_restore.go).
	restorer *pgrestore.Restorer
}

// +kubebuilder:rbac:groups=irc.josie.cloud,resources=sojubouncers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=irc.josie.cloud,resources=sojubouncers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=irc.josie.cloud,resources=sojubouncers/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=route.openshift.io,resources=routes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=route.openshift.io,resources=routes/custom-host,verbs=create
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;list;watch;create;patch;delete
// The bouncer's Backups, for status.lastBackup (lastbackup.Find); a restore (sojubouncer_restore.go): its
// Job and ConfigMap, the failed pod's termination message, and the namespace's Backups and BackupStores it
// reads from.
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backups;backupstores,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list

// Reconcile brings one SojuBouncer's database and children in line with its spec, or cleans up after a
// deleted one, and records what it found.
func (r *SojuBouncerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &ircv1.SojuBouncer{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, b, r.applier.Forget, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	s := r.newSojuBouncerScope(b)
	if !b.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	status := func() *ircv1.SojuBouncerStatus {
		s.Drop(ircv1.ConditionCleanup) // a deleted bouncer's part only
		return s.summarize()
	}
	return reconcile.Finish(ctx, r.status, s, status,
		r.reconcileDatabase,
		r.reconcileRestore,
		r.reconcileAdminUser,
		r.reconcileCertificate,
		r.reconcileConfig,
		r.reconcileDeployment,
		r.reconcileService,
		r.reconcileRoute,
		r.reconcileMetrics,
		r.observeLastBackup,
	)
}

// observeLastBackup finds the bouncer's newest Completed Backup in the cache, for status.lastBackup
// (docs/backup.md). Without the backup API there is none; a failed read keeps what the status shows.
func (r *SojuBouncerReconciler) observeLastBackup(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	last, err := lastbackup.Observe(ctx, r.Client, r.Capabilities.Backups, backupv1.SourceSojuBouncer, s.b.Namespace, s.b.Name)
	if err != nil {
		return ctrl.Result{}, err // s.status still holds the live fields
	}
	s.status.LastBackupTime, s.status.LastBackup = last.Fields()
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler, its watches and the Secret index.
func (r *SojuBouncerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.applier = &apply.Applier{Client: r.Client, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner}
	r.db = newSojuProvisioner(r.CleanupTimeout)
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: ircv1.SojuDatabaseFinalizer}
	r.restorer = &pgrestore.Restorer{Client: r.Client, APIReader: r.APIReader, Applier: r.applier, PostgresImage: r.PostgresImage,
		OwnImage:      &ownimage.Resolver{Image: r.OperatorImage, Reader: r.APIReader, Namespace: r.PodNamespace, Name: r.PodName},
		BackupsServed: r.Capabilities.Backups}
	r.status = &reconcile.StatusWriter{
		Client:     r.Client,
		FieldOwner: sojuStatusFieldOwner,
		Fields:     []string{"observedGeneration", "databaseName", "databaseSecretName", "serviceHost", "ports", "routeHost", "lastBackupTime", "lastBackup", "restoredFrom"},
		Conditions: append([]string{ircv1.ConditionReady, ircv1.ConditionMetricsMonitor, backupv1.ConditionRestored}, sojuParts...),
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &ircv1.SojuBouncer{}, sojuSecretIndex,
		func(o client.Object) []string { return r.secretsOf(o.(*ircv1.SojuBouncer)) }); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("sojubouncer").
		// Status writes change neither generation nor annotations; the release annotation does, and a
		// deletion bumps the generation.
		For(&ircv1.SojuBouncer{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Only Secret metadata is cached: a change bumps resourceVersion, which is all we need to know.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.bouncersForSecret)).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles))
	if r.Capabilities.PodMonitors {
		b = b.Owns(&monitoring.PodMonitor{})
	}
	b, err := watchShared(mgr, b, r.Capabilities, sojuRestores)
	if err != nil {
		return err
	}
	return b.Complete(opmetrics.Instrument(opmetrics.SojuBouncer, mgr.GetClient(), r))
}

// slimPodMonitor keeps a bouncer's PodMonitor's metadata (and a digest of its spec, for the applier).
var slimPodMonitor = apply.Slim(oplabels.FieldOwner, func(p *monitoring.PodMonitor) any { return &p.Spec },
	func(p *monitoring.PodMonitor) { p.Spec = monitoring.PodMonitorSpec{} })

// adminSecretKey is the admin connection Secret b uses; zero when it has none.
func (r *SojuBouncerReconciler) adminSecretKey(b *ircv1.SojuBouncer) types.NamespacedName {
	if n := b.Spec.Database.AdminSecretName; n != "" {
		return types.NamespacedName{Namespace: b.Namespace, Name: n}
	}
	return r.DefaultAdminSecret
}

// secretsOf are the Secrets b reads, as index values.
func (r *SojuBouncerReconciler) secretsOf(b *ircv1.SojuBouncer) []string {
	var out []string
	if k := r.adminSecretKey(b); k.Name != "" {
		out = append(out, k.String())
	}
	if u := b.Spec.AdminUser; u != nil {
		out = append(out, types.NamespacedName{Namespace: b.Namespace, Name: u.PasswordSecret.Name}.String())
	}
	return out
}

// bouncersForSecret maps a Secret the operator made for a bouncer (its database Secret, the TLS Secret
// cert-manager writes with our labels) to that bouncer, and a user's Secret to the bouncers that read it.
func (r *SojuBouncerReconciler) bouncersForSecret(ctx context.Context, o client.Object) []ctrl.Request {
	var reqs []ctrl.Request
	if l := o.GetLabels(); oplabels.IsManaged(l) && l[oplabels.InstanceLabel] != "" {
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[oplabels.InstanceLabel]}})
	}
	readers, err := reconcile.ListRequests(ctx, r.Client, &ircv1.SojuBouncerList{},
		client.MatchingFields{sojuSecretIndex: client.ObjectKeyFromObject(o).String()})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list bouncers for secret", "secret", client.ObjectKeyFromObject(o))
	}
	return append(reqs, readers...)
}

// ParseAdminSecret reads --soju-database-secret: "namespace/name", or empty for none. A bare name is
// refused: the operator's own namespace is not known outside a cluster, so the flag names it.
func ParseAdminSecret(ref string) (types.NamespacedName, error) {
	if ref == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, err := postgres.ParseRef(ref, "")
	if err == nil && ns == "" {
		err = fmt.Errorf("%q has no namespace: write namespace/name", ref)
	}
	if err != nil {
		return types.NamespacedName{}, err
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}
