package irc

import (
	"context"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/ownimage"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// secretNameIndex indexes ErgoNetworks by the name of the oper Secret they reference.
const secretNameIndex = "spec.operCredentials.secretName"

// statusFieldOwner is the field manager of the status the ErgoNetwork controller writes.
const statusFieldOwner = oplabels.FieldOwner + "/ergonetwork"

// DefaultResync is how often every network is reconciled even when nothing changed: a safety net for
// missed events, cheap because an unchanged network costs no write.
const DefaultResync = 30 * time.Minute

// ErgoNetworkReconciler runs the ergo IRC server for each ErgoNetwork.
type ErgoNetworkReconciler struct {
	// Image is the ergo image; ergo.DefaultImage when empty.
	Image string
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int

	// Client reads from the manager's cache and writes to the API server. SetupWithManager takes the
	// manager's when it is nil, as are APIReader and Recorder.
	Client client.Client
	// APIReader reads Secrets straight from the API server: the cache holds only their metadata, which
	// says when a Secret changed and so when to read it again.
	APIReader client.Reader
	// Recorder emits the events users see with kubectl describe.
	Recorder record.EventRecorder
	// Capabilities are the optional APIs this cluster serves, discovered at start-up.
	Capabilities platform.Capabilities
	// OperatorImage is the operator's own image, which a restore Job runs; when empty it is read from the
	// operator's own pod (PodNamespace, PodName), and restores wait (OperatorImageUnknown) while neither
	// is known.
	OperatorImage string
	// PodNamespace and PodName are the operator's own pod (POD_NAMESPACE, POD_NAME).
	PodNamespace, PodName string

	applier *apply.Applier
	own     *ownimage.Resolver
	status  *reconcile.StatusWriter
	secrets secretMemo
	primer  secretPrimer
	// observeRender, when set, is called after each rendering of a network's ircd.yaml (tests count them).
	observeRender func(types.NamespacedName)
	// started is when SetupWithManager ran: networks whose conditions are older converged under an earlier
	// process (primeable).
	started time.Time
}

// +kubebuilder:rbac:groups=irc.josie.cloud,resources=ergonetworks,verbs=get;list;watch
// +kubebuilder:rbac:groups=irc.josie.cloud,resources=ergonetworks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=irc.josie.cloud,resources=ergonetworks/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=route.openshift.io,resources=routes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=route.openshift.io,resources=routes/custom-host,verbs=create

// Reconcile brings one ErgoNetwork's children in line with its spec and records what it found.
func (r *ErgoNetworkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	n := &ircv1.ErgoNetwork{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, n, r.secrets.forget, r.applier.Forget, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	if !n.DeletionTimestamp.IsZero() {
		// Owner references hand the children to the garbage collector; there is nothing to undo here.
		return ctrl.Result{}, nil
	}

	s := r.newErgoNetworkScope(n)
	return reconcile.Finish(ctx, r.status, s, s.summarize,
		r.reconcileOperCredentials,
		r.reconcileStorage,
		r.reconcileRestore,
		r.reconcileCertificate,
		r.reconcileConfig,
		r.reconcileDeployment,
		r.reconcileService,
		r.reconcileRoute,
		r.observeLastBackup,
	)
}

// SetupWithManager registers the reconciler, its watches and the Secret index.
func (r *ErgoNetworkReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.started = time.Now()
	r.applier = &apply.Applier{Client: r.Client, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner}
	r.own = &ownimage.Resolver{Image: r.OperatorImage, Reader: r.APIReader, Namespace: r.PodNamespace, Name: r.PodName}
	r.status = &reconcile.StatusWriter{
		Client:     r.Client,
		FieldOwner: statusFieldOwner,
		Fields:     []string{"observedGeneration", "networkName", "serviceHost", "ports", "routeHost", "restoredFrom", "lastBackupTime", "lastBackup"},
		Conditions: append([]string{ircv1.ConditionReady, ircv1.ConditionImageCurrent, backupv1.ConditionRestored}, partConditions...),
		// Versions before the status writer patched status under the binary's name.
		LegacyManagers: []string{oplabels.OperatorName},
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &ircv1.ErgoNetwork{}, secretNameIndex,
		func(o client.Object) []string {
			n := o.(*ircv1.ErgoNetwork)
			if n.Spec.OperCredentials == nil {
				return nil
			}
			return []string{n.Spec.OperCredentials.SecretName}
		}); err != nil {
		return err
	}

	workers := max(r.MaxConcurrentReconciles, 1)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("ergonetwork").
		// Our own status writes do not change the generation, so they do not wake us up again.
		For(&ircv1.ErgoNetwork{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A retained claim has no owner reference: claims map back to their network by label.
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(networkForClaim)).
		// Only Secret metadata is cached: a change bumps resourceVersion, which is all we need to know.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.networksForSecret)).
		WithOptions(manager.ControllerOptions(mgr, workers))
	b, err := watchShared(mgr, b, r.Capabilities, ergoRestores)
	if err != nil {
		return err
	}
	return b.Complete(opmetrics.Instrument(opmetrics.ErgoNetwork, mgr.GetClient(), r))
}

// networksForSecret maps a Secret to the networks in its namespace that take their oper hash from it,
// and a TLS Secret cert-manager wrote for a network (labelled through the Certificate's secretTemplate)
// to that network.
func (r *ErgoNetworkReconciler) networksForSecret(ctx context.Context, o client.Object) []ctrl.Request {
	if l := o.GetLabels(); oplabels.IsManaged(l) && l[oplabels.InstanceLabel] != "" {
		return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[oplabels.InstanceLabel]}}}
	}
	reqs, err := reconcile.ListRequests(ctx, r.Client, &ircv1.ErgoNetworkList{},
		client.InNamespace(o.GetNamespace()), client.MatchingFields{secretNameIndex: o.GetName()})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list networks for secret", "secret", client.ObjectKeyFromObject(o))
	}
	return reqs
}

// networkForClaim maps a claim the operator made for ergo to its network, by label rather than owner
// reference, which a claim kept under reclaimPolicy Retain does not have.
func networkForClaim(_ context.Context, o client.Object) []ctrl.Request {
	l := o.GetLabels()
	if !oplabels.IsManaged(l) || l[oplabels.NameLabel] != ergo.AppName || l[oplabels.InstanceLabel] == "" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[oplabels.InstanceLabel]}}}
}

// CacheRules are the kinds the ErgoNetwork controller reads: only the children the operator made, so a
// cluster full of unrelated Deployments, ConfigMaps and Services costs the operator no memory. Secrets
// are watched as metadata only (see SetupWithManager), cut down by secretIdentity, and their data read
// from the API server when they change (readSecretKey); every Secret is cached, because the oper Secret
// is the user's and carries no label of ours.
//
// A network's own children (labelled app.kubernetes.io/name=ergo, so no other group's objects) are cached
// slim (apply.Slim): metadata and status only, without the ConfigMap's ircd.yaml, the Deployment's pod
// spec, the Service's, Certificate's and Route's specs. The applier tells drift from their content digest
// and what it remembers of its own applies. The claim is cached whole: reconcileStorage reads its spec.
func CacheRules(caps platform.Capabilities) []manager.CacheRule {
	children := labels.SelectorFromSet(labels.Set{oplabels.ManagedByLabel: oplabels.OperatorName, oplabels.NameLabel: ergo.AppName})
	rules := []manager.CacheRule{
		{Object: &corev1.Secret{}, Scope: manager.All, Transform: secretIdentity,
			Why: "the oper Secret is the user's; only its identity is cached, and its data read when it changes"},
		{Object: &appsv1.Deployment{}, TransformSelector: children, Transform: slimDeployment},
		{Object: &corev1.ConfigMap{}, TransformSelector: children, Transform: slimConfigMap},
		{Object: &corev1.Service{}, TransformSelector: children, Transform: slimService},
		{Object: &corev1.PersistentVolumeClaim{}},
	}
	if caps.CertManager {
		rules = append(rules, manager.CacheRule{Object: &cmv1.Certificate{}, TransformSelector: children, Transform: slimCertificate})
	}
	if caps.Routes {
		rules = append(rules, manager.CacheRule{Object: &routev1.Route{}, TransformSelector: children, Transform: slimRoute})
	}
	return rules
}

// The slim transforms of a network's children: each keeps metadata and status, and of the rest only
// what a step reads from the cache: of the Deployment, the pod template's legacy config digest (on the
// Deployments of networks that have not changed since an upgrade) and the ergo container's image, which
// decides whether the operator's image may replace it (ergo.ChooseImage).
var (
	slimDeployment = apply.Slim(oplabels.FieldOwner, func(d *appsv1.Deployment) any { return &d.Spec },
		func(d *appsv1.Deployment) {
			var kept map[string]string
			if v, ok := d.Spec.Template.Annotations[ergo.LegacyConfigDigestAnnotation]; ok {
				kept = map[string]string{ergo.LegacyConfigDigestAnnotation: v}
			}
			var containers []corev1.Container
			if image := ergo.RunningImage(d); image != "" {
				containers = []corev1.Container{{Name: ergo.ContainerName, Image: image}}
			}
			d.Spec = appsv1.DeploymentSpec{Replicas: d.Spec.Replicas,
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: kept},
					Spec: corev1.PodSpec{Containers: containers}}}
		})
	slimConfigMap = apply.SlimKeeping(oplabels.FieldOwner, []string{ergo.ConfigSourceAnnotation, ergo.ConfigStateAnnotation},
		func(c *corev1.ConfigMap) any { return []any{c.Data, c.BinaryData, c.Immutable} },
		func(c *corev1.ConfigMap) { c.Data, c.BinaryData = nil, nil })
	slimService = apply.Slim(oplabels.FieldOwner, func(s *corev1.Service) any { return &s.Spec },
		func(s *corev1.Service) { s.Spec = corev1.ServiceSpec{} })
	slimCertificate = apply.Slim(oplabels.FieldOwner, func(c *cmv1.Certificate) any { return &c.Spec },
		func(c *cmv1.Certificate) { c.Spec = cmv1.CertificateSpec{} })
	slimRoute = apply.Slim(oplabels.FieldOwner, func(r *routev1.Route) any { return &r.Spec },
		func(r *routev1.Route) { r.Spec = routev1.RouteSpec{} })
)

// secretIdentity is the Secret cache's transform: of each Secret's metadata it keeps only what the
// operator reads (name, namespace, uid, resourceVersion and its own two labels). Every Secret in the
// watched namespaces is cached, most of them the operator's business only in name, so annotations (a
// kubectl last-applied-configuration annotation holds the whole Secret, data included), other labels,
// owner references and managed fields are dropped before they take memory.
func secretIdentity(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	out := &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		},
	}
	for _, k := range []string{oplabels.ManagedByLabel, oplabels.InstanceLabel} {
		if v, ok := m.Labels[k]; ok {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[k] = v
		}
	}
	apply.Compact(out)
	return out, nil
}
