package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/storeaccess"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// Field indexes of BackupStores: by credentials Secret, by CA ConfigMap (their changes wake the stores
// that name them) and by endpoint and bucket (a store's change wakes the others that share its bucket).
const (
	storeSecretIndex    = "backup.backupstore.spec.credentials.secretName"
	storeConfigMapIndex = "backup.backupstore.spec.caBundle.configMapName"
	storeTargetIndex    = "backup.backupstore.target"
)

// How soon a BackupStore is checked again: a reachable one now and then (a store can go away without an
// event), one that refused the credentials or lacks its bucket when its Secret changes or after a while
// (a fix on the store's side sends no event), an unreachable one with a back-off that grows with the time
// it has been unreachable, from storeMinBackoff to storeMaxBackoff.
const (
	storeHealthyRecheck = 10 * time.Minute
	storeRefusedRecheck = 5 * time.Minute
	storeMinBackoff     = 10 * time.Second
	storeMaxBackoff     = 5 * time.Minute
	// storeProbeTimeout bounds one probe, so that a store that accepts connections and never answers does
	// not hold a worker.
	storeProbeTimeout = 30 * time.Second
)

// backupStoreReconciler checks that each BackupStore's store answers with its credentials and bucket, and
// that its namespace's root in the bucket is the namespace's own.
type backupStoreReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Client reads from the manager's cache and writes to the API server; SetupWithManager fills it,
	// APIReader and Recorder when nil.
	Client client.Client
	// APIReader reads Secrets and ConfigMaps from the API server: the cache holds only their metadata.
	APIReader client.Reader
	// Recorder emits events.
	Recorder record.EventRecorder

	status *reconcile.StatusWriter
}

// backupStoreCache: a store's Secret and CA ConfigMap are the user's, so every one's metadata is cached
// (to notice changes) and the data is read from the API server.
func backupStoreCache(platform.Capabilities) []manager.CacheRule {
	return []manager.CacheRule{
		{Object: &corev1.Secret{}, Scope: manager.All,
			Why: "a BackupStore's credentials Secret is the user's; its metadata says when it changed, its data is read from the API server"},
		{Object: &corev1.ConfigMap{}, Scope: manager.All,
			Why:               "a BackupStore's CA ConfigMap is the user's; its metadata says when it changed, its data is read from the API server",
			TransformSelector: notManaged, Transform: configMapIdentity},
	}
}

// notManaged selects the objects the operator did not make: the users' ConfigMaps, of which the cache
// keeps only the identity (configMapIdentity); the operator's own keep their data for the other groups.
var notManaged = labels.NewSelector().Add(must(labels.NewRequirement(oplabels.ManagedByLabel, selection.NotEquals, []string{oplabels.OperatorName})))

func must(r *labels.Requirement, err error) labels.Requirement {
	if err != nil {
		panic(err)
	}
	return *r
}

// configMapIdentity cuts a user's ConfigMap down to its name, namespace, uid and resourceVersion: enough to
// wake the stores that name it, and no copy of every ConfigMap's data in the operator's memory.
func configMapIdentity(in any) (any, error) {
	var om metav1.ObjectMeta
	switch o := in.(type) {
	case *corev1.ConfigMap:
		om = o.ObjectMeta
	case *metav1.PartialObjectMetadata:
		om = o.ObjectMeta
	default:
		return in, nil
	}
	id := metav1.ObjectMeta{Name: om.Name, Namespace: om.Namespace, UID: om.UID, ResourceVersion: om.ResourceVersion,
		Labels: om.Labels}
	if pm, ok := in.(*metav1.PartialObjectMetadata); ok {
		return &metav1.PartialObjectMetadata{TypeMeta: pm.TypeMeta, ObjectMeta: id}, nil
	}
	cm := in.(*corev1.ConfigMap)
	return &corev1.ConfigMap{TypeMeta: cm.TypeMeta, ObjectMeta: id}, nil
}

// SetupWithManager registers the reconciler, its indexes and its watches.
func (r *backupStoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.status = &reconcile.StatusWriter{Client: r.Client, FieldOwner: oplabels.FieldOwner + "/backupstore",
		Fields: []string{"observedGeneration", "location"}, Conditions: []string{reconcile.ConditionReady}}
	idx := mgr.GetFieldIndexer()
	ctx := context.Background()
	if err := idx.IndexField(ctx, &backupv1.BackupStore{}, storeSecretIndex, func(o client.Object) []string {
		return []string{o.(*backupv1.BackupStore).Spec.Credentials.SecretName}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &backupv1.BackupStore{}, storeConfigMapIndex, func(o client.Object) []string {
		if ca := o.(*backupv1.BackupStore).Spec.CABundle; ca != nil {
			return []string{ca.ConfigMapName}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &backupv1.BackupStore{}, storeTargetIndex, func(o client.Object) []string {
		return []string{storeTarget(o.(*backupv1.BackupStore))}
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("backupstore").
		For(&backupv1.BackupStore{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Another store's creation, change or deletion may take or free a tree this store contests.
		Watches(&backupv1.BackupStore{}, handler.EnqueueRequestsFromMapFunc(r.storesSharingBucket),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletionPredicate()))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.storesIndexed(storeSecretIndex))).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.storesIndexed(storeConfigMapIndex))).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles)).
		Complete(r)
}

// deletionPredicate passes updates that set a deletionTimestamp (which do not change the generation) and
// deletions.
func deletionPredicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		CreateFunc:  func(event.CreateEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backupstores,verbs=get;list;watch
// +kubebuilder:rbac:groups=backup.josie.cloud,resources=backupstores/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// storeScope is one BackupStore reconcile's working state.
type storeScope struct {
	*reconcile.Session
	store  *backupv1.BackupStore
	status *backupv1.BackupStoreStatus
}

// Reconcile resolves the store's Secret and CA, refuses a contested prefix, and probes the store.
func (r *backupStoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	store := &backupv1.BackupStore{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, store, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	if !store.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the operator made nothing for a store: nothing to undo
	}
	status := store.Status.DeepCopy()
	s := &storeScope{
		Session: &reconcile.Session{Owner: store, Before: store.Status.Conditions, Conditions: &status.Conditions, Client: r.Client, Recorder: r.Recorder},
		store:   store,
		status:  status,
	}
	return reconcile.Finish(ctx, r.status, s, func() *backupv1.BackupStoreStatus {
		status.ObservedGeneration = store.Generation
		return status
	}, r.reconcileStore)
}

// reconcileStore is the store's one step: Ready says what it found.
func (r *backupStoreReconciler) reconcileStore(ctx context.Context, s *storeScope) (ctrl.Result, error) {
	store := s.store
	s.status.Location = ""
	cfg, err := storeaccess.Config(ctx, r.APIReader, store)
	var ref *storeaccess.Refusal
	switch {
	case errors.As(err, &ref):
		s.Fail(reconcile.ConditionReady, ref.Reason, ref.Message)
		return ctrl.Result{}, nil // the Secret's or ConfigMap's watch, or a spec change, brings the fix
	case err != nil:
		s.Set(reconcile.ConditionReady, metav1.ConditionUnknown, backupv1.ReasonStoreUnreachable, "the store's references could not be read")
		return ctrl.Result{}, err
	}

	var same backupv1.BackupStoreList
	if err := r.Client.List(ctx, &same, client.MatchingFields{storeTargetIndex: storeTarget(store)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list stores of the same bucket: %w", err)
	}
	if prefixConflict(store, same.Items) {
		// Never name the other namespace: that another tenant uses the bucket is all this one learns.
		s.Fail(reconcile.ConditionReady, backupv1.ReasonPrefixConflict, fmt.Sprintf(
			"this namespace's tree %s in bucket %s overlaps the tree of another namespace's BackupStore on the same store, made earlier; choose another spec.prefix",
			namespaceRoot(store.Spec.Prefix, store.Namespace), store.Spec.Bucket))
		return ctrl.Result{}, nil
	}

	res, err := r.probe(ctx, s, cfg)
	if err == nil && res.RequeueAfter == storeHealthyRecheck {
		s.status.Location = location(store.Spec.Bucket, namespaceRoot(store.Spec.Prefix, store.Namespace))
	}
	return res, err
}

// probe lists at most one key under the namespace's root: the cheapest request that proves the bucket
// exists and the credentials may read the namespace's tree.
func (r *backupStoreReconciler) probe(ctx context.Context, s *storeScope, cfg objectstore.Config) (ctrl.Result, error) {
	store := s.store
	rooted := cfg
	rooted.Prefix = namespaceRoot(cfg.Prefix, store.Namespace)
	rooted.Prefix = rooted.Prefix[:len(rooted.Prefix)-1]
	st, err := objectstore.New(rooted)
	if err != nil {
		s.Fail(reconcile.ConditionReady, backupv1.ReasonInvalid, err.Error())
		return ctrl.Result{}, nil
	}
	pctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	err = st.Check(pctx)
	bucket := store.Spec.Bucket
	switch {
	case err == nil:
		if reconcile.Changed(s.Before, reconcile.ConditionReady, metav1.ConditionTrue, backupv1.ReasonReachable) {
			s.Normalf(backupv1.ReasonReachable, "the store answers for bucket %s with the Secret's credentials", bucket)
		}
		s.Set(reconcile.ConditionReady, metav1.ConditionTrue, backupv1.ReasonReachable,
			fmt.Sprintf("the store answers for bucket %s with the Secret's credentials", bucket))
		return ctrl.Result{RequeueAfter: storeHealthyRecheck}, nil
	case errors.Is(err, objectstore.ErrCredentials):
		s.Fail(reconcile.ConditionReady, backupv1.ReasonCredentialsRefused,
			fmt.Sprintf("the store refused the access key of Secret %q for bucket %s", store.Spec.Credentials.SecretName, bucket))
		return ctrl.Result{RequeueAfter: storeRefusedRecheck}, nil
	case errors.Is(err, objectstore.ErrNoBucket):
		s.Fail(reconcile.ConditionReady, backupv1.ReasonBucketMissing,
			fmt.Sprintf("bucket %s does not exist (the operator never creates buckets)", bucket))
		return ctrl.Result{RequeueAfter: storeRefusedRecheck}, nil
	default:
		// The store's errors have the credentials cut out (objectstore.Store.wrap).
		s.Fail(reconcile.ConditionReady, backupv1.ReasonStoreUnreachable, fmt.Sprintf("the store did not answer: %v", err))
		return ctrl.Result{RequeueAfter: unreachableBackoff(s.Before, time.Now())}, nil
	}
}

// unreachableBackoff is how soon an unreachable store is tried again: half the time it has been
// unreachable (by Ready's last transition), between storeMinBackoff and storeMaxBackoff, so a store that
// is down for long is asked less and less often without the operator keeping a counter.
func unreachableBackoff(before []metav1.Condition, now time.Time) time.Duration {
	c := meta.FindStatusCondition(before, reconcile.ConditionReady)
	if c == nil || c.Reason != backupv1.ReasonStoreUnreachable {
		return storeMinBackoff
	}
	return min(max(now.Sub(c.LastTransitionTime.Time)/2, storeMinBackoff), storeMaxBackoff)
}

// storesIndexed maps a Secret or ConfigMap to the stores of its namespace that name it.
func (r *backupStoreReconciler) storesIndexed(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		reqs, err := reconcile.ListRequests(ctx, r.Client, &backupv1.BackupStoreList{},
			client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()})
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list BackupStores", "index", index, "object", client.ObjectKeyFromObject(o))
		}
		return reqs
	}
}

// storesSharingBucket maps a store to the other stores of its endpoint and bucket, in every namespace.
func (r *backupStoreReconciler) storesSharingBucket(ctx context.Context, o client.Object) []ctrl.Request {
	store, ok := o.(*backupv1.BackupStore)
	if !ok {
		return nil
	}
	reqs, err := reconcile.ListRequests(ctx, r.Client, &backupv1.BackupStoreList{},
		client.MatchingFields{storeTargetIndex: storeTarget(store)})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list BackupStores of a bucket")
	}
	var out []ctrl.Request
	for _, req := range reqs {
		if req.NamespacedName != client.ObjectKeyFromObject(o) {
			out = append(out, req)
		}
	}
	return out
}
