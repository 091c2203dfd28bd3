package homelab

import (
	"context"
	"fmt"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/domain"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// domainParts are the Domain's part conditions in the order Ready reports them.
var domainParts = []string{homelabv1.ConditionCertificate, homelabv1.ConditionGateway}

// DomainReconciler makes each Domain's Certificate and Gateway in the gateway namespace, and removes them
// (with the certificate's Secret) when the Domain is deleted.
type DomainReconciler struct {
	// MaxConcurrentReconciles bounds the workers; 1 when zero.
	MaxConcurrentReconciles int
	// Capabilities are the optional APIs this cluster serves (cert-manager, Istio).
	Capabilities platform.Capabilities
	// GatewayNamespace is where the Certificates and Gateways go; domain.DefaultGatewayNamespace when
	// empty.
	GatewayNamespace string
	// GatewaySelector picks the ingress gateway pods of the Gateways; domain.DefaultGatewaySelector when
	// empty.
	GatewaySelector map[string]string
	// Policy is --homelab-domain-policy: what each namespace may claim.
	Policy DomainPolicy
	// Client reads from the manager's cache and writes to the API server; APIReader reads what a deleted
	// Domain's cleanup removes, which the cache may not have seen yet. SetupWithManager fills both and
	// Recorder when nil.
	Client    client.Client
	APIReader client.Reader
	// Recorder emits events.
	Recorder record.EventRecorder

	applier *apply.Applier
	status  *reconcile.StatusWriter
	// finalizer holds a Domain until its objects in the gateway namespace are gone.
	finalizer reconcile.Finalizer
}

// domainCache: the Domain's children, which carry the operator's labels.
func domainCache(caps platform.Capabilities) []manager.CacheRule {
	var rules []manager.CacheRule
	if caps.CertManager {
		rules = append(rules, manager.CacheRule{Object: &cmv1.Certificate{}})
	}
	if caps.Istio {
		rules = append(rules, manager.CacheRule{Object: &istio.Gateway{}})
	}
	return rules
}

// SetupWithManager registers the reconciler (it reads the group's index of Domains by hostname, an Index
// row of group.go the webhook reads too); overlapping Domains and the children in the gateway namespace
// wake a Domain.
func (r *DomainReconciler) SetupWithManager(mgr ctrl.Manager) error {
	reconcile.FromManager(mgr, &r.Client, &r.APIReader, &r.Recorder)
	r.applier = &apply.Applier{Client: r.Client, Reader: r.APIReader, FieldOwner: oplabels.FieldOwner}
	r.status = &reconcile.StatusWriter{Client: r.Client, FieldOwner: oplabels.FieldOwner + "/domain",
		Fields:     []string{"observedGeneration", "gateway", "certificateSecret"},
		Conditions: append([]string{homelabv1.ConditionReady}, domainParts...)}
	r.finalizer = reconcile.Finalizer{Client: r.Client, Name: homelabv1.DomainFinalizer}
	if r.GatewayNamespace == "" {
		r.GatewayNamespace = domain.DefaultGatewayNamespace
	}
	if len(r.GatewaySelector) == 0 {
		r.GatewaySelector = domain.DefaultGatewaySelector()
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("domain").
		For(&homelabv1.Domain{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A Domain appearing, going or changing its issuer may hand a hostname to another Domain (or take
		// it): the Domains whose hostnames overlap it are checked again.
		Watches(&homelabv1.Domain{}, handler.EnqueueRequestsFromMapFunc(r.overlapping),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(manager.ControllerOptions(mgr, r.MaxConcurrentReconciles))
	// The children live in another namespace: no owner reference, so they map back by label.
	if r.Capabilities.CertManager {
		b = b.Watches(&cmv1.Certificate{}, handler.EnqueueRequestsFromMapFunc(domainForChild))
	}
	if r.Capabilities.Istio {
		b = b.Watches(&istio.Gateway{}, handler.EnqueueRequestsFromMapFunc(domainForChild))
	}
	return b.Complete(opmetrics.Instrument(opmetrics.Domain, mgr.GetClient(), r))
}

// overlapping maps a Domain to the other Domains whose hostnames overlap it, whatever the policy says of
// them (each decides its own claim when reconciled).
func (r *DomainReconciler) overlapping(ctx context.Context, o client.Object) []ctrl.Request {
	d, ok := o.(*homelabv1.Domain)
	if !ok {
		return nil
	}
	var reqs []ctrl.Request
	seen := map[client.ObjectKey]bool{client.ObjectKeyFromObject(d): true}
	for _, key := range claimIndexValues(d) {
		var list homelabv1.DomainList
		if err := r.Client.List(ctx, &list, client.MatchingFields{domainHostnameIndex: key}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list Domains by hostname", "hostname", key)
			return nil
		}
		for i := range list.Items {
			k := client.ObjectKeyFromObject(&list.Items[i])
			if !seen[k] && hostnamesOverlap(d.Spec.Hostname, list.Items[i].Spec.Hostname) {
				seen[k] = true
				reqs = append(reqs, ctrl.Request{NamespacedName: k})
			}
		}
	}
	return reqs
}

// domainForChild maps a Certificate or Gateway the operator made for a Domain back to it.
func domainForChild(_ context.Context, o client.Object) []ctrl.Request {
	ns, name, ok := domain.Owner(o.GetLabels())
	if !ok {
		return nil
	}
	return []ctrl.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=domains,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=domains/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=homelab.mortenolsen.pro,resources=domains/finalizers,verbs=update
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.istio.io,resources=gateways,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile applies the Domain's Certificate and Gateway, or cleans them up when it is deleted.
func (r *DomainReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &homelabv1.Domain{}
	if found, err := reconcile.Load(ctx, r.Client, req.NamespacedName, d, r.status.Forget); !found {
		return ctrl.Result{}, err
	}
	if !d.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, r.newDomainScope(d))
	}
	// The finalizer goes on before anything is made in the gateway namespace, and only when something can
	// be: a cluster without cert-manager and Istio gets no object there, so nothing to clean up.
	if r.Capabilities.CertManager || r.Capabilities.Istio {
		if err := r.finalizer.Ensure(ctx, d); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	s := r.newDomainScope(d)
	reason, msg, err := r.claim(ctx, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	steps := []reconcile.Step[*domainScope]{r.reconcileCertificate, r.reconcileGateway}
	if reason != "" {
		steps = []reconcile.Step[*domainScope]{func(ctx context.Context, s *domainScope) (ctrl.Result, error) {
			return ctrl.Result{}, r.refuse(ctx, s, reason, msg)
		}}
	}
	return reconcile.Finish(ctx, r.status, s, func() *homelabv1.DomainStatus {
		if reason == "" {
			s.Summarize(domainParts, homelabv1.ReasonReady,
				fmt.Sprintf("%s and *.%s are served over HTTPS", d.Spec.Hostname, d.Spec.Hostname))
		}
		s.status.ObservedGeneration = d.Generation
		return s.status
	}, steps...)
}

// claim decides whether the Domain may have its hostname, as the webhook does on creation, and again on
// every reconcile (the webhook may not be installed, two Domains may pass it in the same instant, the
// policy or the issuer may have changed): the policy must allow the Domain's namespace the hostname and
// the issuer, and no Domain that claimed an overlapping hostname earlier may exist. It returns the reason
// and message of a refusal, or "" when the Domain may go on.
func (r *DomainReconciler) claim(ctx context.Context, d *homelabv1.Domain) (string, string, error) {
	if ok, msg := r.Policy.Allows(d.Namespace, d.Spec.Hostname, d.Spec.Issuer); !ok {
		return homelabv1.ReasonDomainNotAllowed, msg, nil
	}
	others, err := overlappingClaims(ctx, r.Client, r.Policy, d)
	if err != nil {
		return "", "", err
	}
	var owner *homelabv1.Domain
	for i := range others {
		if claimsBefore(&others[i], d) && (owner == nil || claimsBefore(&others[i], owner)) {
			owner = &others[i]
		}
	}
	if owner == nil {
		return "", "", nil
	}
	return homelabv1.ReasonHostnameTaken, takenMessage(d, owner) + "; this Domain makes nothing until that one is gone", nil
}

// refuse records a Domain that may not have its hostname: every part and Ready say why, a Warning event
// tells the user once per refusal (WarnOnce on Ready: the message names the rule or the owner, so a new
// one is news), and whatever the Domain made before (it may have been the owner, or allowed, until now)
// is removed, so that the name is served only by its owner's certificate.
func (r *DomainReconciler) refuse(ctx context.Context, s *domainScope, reason, msg string) error {
	s.WarnOnce(homelabv1.ConditionReady, reason, msg)
	for _, t := range domainParts {
		s.Set(t, metav1.ConditionFalse, reason, msg)
	}
	s.Set(homelabv1.ConditionReady, metav1.ConditionFalse, reason, msg)
	s.status.Gateway, s.status.CertificateSecret = "", ""
	deleted, err := r.removeChildren(ctx, s.domain)
	if len(deleted) > 0 {
		s.Normalf(eventDomainCleanedUp, "Deleted %s: %s", strings.Join(deleted, ", "), reason)
	}
	return err
}

// reconcileCertificate asks cert-manager for the Domain's certificate in the gateway namespace.
func (r *DomainReconciler) reconcileCertificate(ctx context.Context, s *domainScope) (ctrl.Result, error) {
	s.status.CertificateSecret = ""
	if !r.Capabilities.CertManager {
		s.MissingAPI(homelabv1.ConditionCertificate, "a Domain needs cert-manager (cert-manager.io/v1 Certificate), which this cluster does not serve; install cert-manager, then restart the operator")
		return ctrl.Result{}, nil
	}
	desired := domain.Certificate(s.domain, r.GatewayNamespace)
	if res, ok, err := r.notOurs(ctx, s, &cmv1.Certificate{}, desired, homelabv1.ConditionCertificate); !ok {
		return res, err
	}
	if ok, res, err := s.Apply(ctx, desired, homelabv1.ConditionCertificate); !ok {
		return res, err
	}
	s.status.CertificateSecret = r.GatewayNamespace + "/" + desired.Spec.SecretName
	if ready := reconcile.CertificateReady(desired); ready.Ready {
		s.Set(homelabv1.ConditionCertificate, metav1.ConditionTrue, homelabv1.ReasonReady,
			fmt.Sprintf("Certificate %s/%s is issued", desired.Namespace, desired.Name))
	} else {
		s.Set(homelabv1.ConditionCertificate, metav1.ConditionFalse, homelabv1.ReasonCertificatePending,
			fmt.Sprintf("Certificate %s/%s: %s", desired.Namespace, desired.Name, ready.Message))
	}
	return ctrl.Result{}, nil
}

// reconcileGateway applies the Istio Gateway serving the Domain's hosts with the certificate.
func (r *DomainReconciler) reconcileGateway(ctx context.Context, s *domainScope) (ctrl.Result, error) {
	s.status.Gateway = ""
	if !r.Capabilities.Istio {
		s.MissingAPI(homelabv1.ConditionGateway, "a Domain needs Istio (networking.istio.io/v1 Gateway and VirtualService), which this cluster does not serve; install Istio, then restart the operator")
		return ctrl.Result{}, nil
	}
	desired := domain.Gateway(s.domain, r.GatewayNamespace, r.GatewaySelector)
	if res, ok, err := r.notOurs(ctx, s, &istio.Gateway{}, desired, homelabv1.ConditionGateway); !ok {
		return res, err
	}
	if ok, res, err := s.Apply(ctx, desired, homelabv1.ConditionGateway); !ok {
		return res, err
	}
	s.status.Gateway = domain.GatewayRef(s.domain, r.GatewayNamespace)
	s.Set(homelabv1.ConditionGateway, metav1.ConditionTrue, homelabv1.ReasonApplied,
		fmt.Sprintf("Gateway %s serves HTTPS with the certificate and redirects HTTP", s.status.Gateway))
	return ctrl.Result{}, nil
}

// notOurs refuses to apply over an object of desired's name in the gateway namespace that the operator
// made for another Domain (the apply path already refuses objects the operator did not make): the
// gateway namespace is shared by the Domains of every namespace. ok is false when the part must wait; the
// Warning goes out once per holder (Refuse: the message names the Domain that holds the name), not on
// every ConflictRetry.
func (r *DomainReconciler) notOurs(ctx context.Context, s *domainScope, live, desired client.Object, condType string) (ctrl.Result, bool, error) {
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, true, nil
	}
	if err != nil {
		s.Set(condType, metav1.ConditionUnknown, homelabv1.ReasonApplyFailed, err.Error())
		return ctrl.Result{}, false, err
	}
	if l := live.GetLabels(); oplabels.IsManaged(l) && !domain.BelongsTo(l, s.domain) {
		msg := fmt.Sprintf("%s %s/%s already exists for Domain %s/%s; it is left untouched",
			desired.GetObjectKind().GroupVersionKind().Kind, desired.GetNamespace(), desired.GetName(),
			l[domain.NamespaceLabel], l[domain.NameLabel])
		s.Refuse(condType, homelabv1.ReasonNameConflict, msg)
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, false, nil
	}
	return ctrl.Result{}, true, nil
}

// Event reasons of a Domain's clean-up.
const eventDomainCleanedUp = "CleanedUp"

// eventObject is what a clean-up event names.
func eventObject(kind string, o client.Object) string {
	return fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName())
}
