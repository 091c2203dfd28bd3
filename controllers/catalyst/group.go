package catalyst

import (
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/kit/admit"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Options configure the catalyst controllers; flags.go fills them from the command line.
type Options struct {
	// Defaults are what an environment gets when its Project says nothing.
	Defaults catalyst.Defaults
	// MaxConcurrentReconciles is how many objects of each kind are reconciled at once; 1 when zero.
	MaxConcurrentReconciles int
	// WatchNamespaces are the namespaces the operator is limited to (WATCH_NAMESPACE); empty is the
	// whole cluster. Environments make namespaces and fill them, which a namespace-scoped install
	// (OLM's OwnNamespace or SingleNamespace) has neither the cache nor the permissions for: then the
	// group runs no controller and its webhook refuses new Environments, saying why (scoped.go).
	WatchNamespaces []string
	// Build is the operator's build settings: the builder image and the plain-http registries.
	Build catalyst.BuildConfig
	// Deploy is the operator's deploy settings: git CAs, the checkout cache, Helm's history.
	Deploy DeployConfig
	// Now is the clock previews expire by; time.Now when nil (tests set a clock they can move).
	Now func() time.Time
}

// Field indexes on Environments, shared by both reconcilers and the webhook (Group's Index rows).
const (
	// namespaceIndex indexes Environments by the namespace they get: the derived name, and
	// status.namespace when it differs.
	namespaceIndex = "catalyst.namespace"
	// projectIndex indexes Environments by their Project's namespace/name.
	projectIndex = "catalyst.project"
)

// Group is the catalyst API group as the manager sees it: the cache rules both reconcilers share, the
// field indexes, both reconcilers and the Environment webhook, as a table.
func Group(opts Options) manager.Group {
	if len(opts.WatchNamespaces) > 0 {
		// A namespace-scoped install runs no controller and caches nothing for the group (scoped.go).
		return manager.NewGroup("catalyst", manager.Webhook{For: &catalystv1.Environment{},
			Validator: func(ctrl.Manager) (admission.CustomValidator, error) { return scopedWebhook(opts.WatchNamespaces), nil }})
	}
	return manager.NewGroup("catalyst",
		manager.SharedCache{Name: "catalyst children", Cache: CacheRules},
		manager.Index{Object: &catalystv1.Environment{}, Field: namespaceIndex, Extract: func(o client.Object) []string {
			return namespacesOf(o.(*catalystv1.Environment))
		}},
		manager.Index{Object: &catalystv1.Environment{}, Field: projectIndex, Extract: func(o client.Object) []string {
			return []string{projectKey(o.(*catalystv1.Environment))}
		}},
		manager.Reconciler{Name: "Environment", Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			env := &EnvironmentReconciler{Defaults: opts.Defaults, MaxConcurrentReconciles: opts.MaxConcurrentReconciles, Capabilities: caps,
				Build: opts.Build, Deploy: opts.Deploy, Now: opts.Now}
			return env.SetupWithManager(mgr)
		}},
		manager.Reconciler{Name: "Project", Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&ProjectReconciler{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).SetupWithManager(mgr)
		}},
		manager.Webhook{For: &catalystv1.Environment{}, Validator: func(mgr ctrl.Manager) (admission.CustomValidator, error) {
			return admit.Typed(&EnvironmentValidator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader()}), nil
		}},
	)
}

// CacheRules are the kinds the catalyst controllers read besides Projects and Environments: only what the
// operator made (namespaces and their contents carry its managed-by label). A namespace the operator did
// not make is read from the API server, once, when an environment's name leads to it.
func CacheRules(caps platform.Capabilities) []manager.CacheRule {
	children := labels.SelectorFromSet(labels.Set{oplabels.ManagedByLabel: oplabels.OperatorName, oplabels.NameLabel: catalyst.AppName})
	rules := []manager.CacheRule{
		{Object: &corev1.Namespace{}},
		// The quota is only applied too, but the quota controller rewrites its status as usage moves: it
		// is cached slim (apply.Slim: identity, status, and a digest of the rest), whose content digest
		// tells a status write from an edit without a read.
		{Object: &corev1.ResourceQuota{}, TransformSelector: children, Transform: slimQuota, Unlisted: true},
		{Object: &batchv1.Job{}}, // build Jobs
	}
	// What else an environment's namespace holds is only applied, never read but by the applier, and
	// nobody writes its status: cached as metadata only (metadataChildren). None of these kinds is ever
	// listed, only got by name, so their informers keep no namespace index (Unlisted): with one
	// namespace per environment, the index's set per namespace was a fifth of an environment's heap.
	for _, k := range metadataChildren {
		rules = append(rules, manager.CacheRule{Object: k, Transform: metadataOnly, Unlisted: true})
	}
	if caps.CertManager {
		rules = append(rules, manager.CacheRule{Object: &cmv1.Certificate{}})
	}
	return append(rules, deployCacheRules()...)
}

// slimQuota is the quota's slim transform: its spec is only ever applied.
var slimQuota = apply.Slim(oplabels.FieldOwner, func(q *corev1.ResourceQuota) any { return &q.Spec },
	func(q *corev1.ResourceQuota) { q.Spec = corev1.ResourceQuotaSpec{} })

// metadataChildren are the kinds of an environment's children that the operator only applies and whose
// status nobody writes: the API server sends the operator their metadata only (controller-runtime's
// metadata-only watches), and the cache keeps of each its identity, owner, managed-by label and applied
// digest (apply.MetadataOnly). The Applier knows one unchanged by the resourceVersion its own apply
// answered, and reads one whole from the API server when that moved (an edit by hand), to compare and
// repair it. No other group reads these kinds, so no typed cache of them is ever started.
var metadataChildren = []client.Object{&corev1.LimitRange{}, &networkingv1.NetworkPolicy{}, &networkingv1.Ingress{},
	&corev1.ServiceAccount{}, &rbacv1.RoleBinding{}}

var metadataOnly = apply.MetadataOnly(oplabels.FieldOwner)

// namespacesOf are the namespaces an environment has or would get.
func namespacesOf(env *catalystv1.Environment) []string {
	out := []string{catalyst.PartsOf(env).Namespace()}
	if ns := env.Status.Namespace; ns != "" && ns != out[0] {
		out = append(out, ns)
	}
	return out
}

// projectKey is the namespace/name of an environment's Project.
func projectKey(env *catalystv1.Environment) string {
	return catalyst.PartsOf(env).ProjectNamespace + "/" + env.Spec.ProjectRef.Name
}
