package catalyst

import (
	"context"
	"fmt"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// reconcileProject finds the environment's Project. A missing one is a user mistake: a condition and a
// Warning event (once: s.Refuse), and the reconciler waits for the Project to appear (its creation wakes it).
func (r *EnvironmentReconciler) reconcileProject(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	if s.expired {
		return ctrl.Result{}, nil
	}
	key := client.ObjectKey{Namespace: s.parts.ProjectNamespace, Name: s.env.Spec.ProjectRef.Name}
	p := &catalystv1.Project{}
	err := r.Client.Get(ctx, key, p)
	if key.Namespace != s.env.Namespace && (apierrors.IsNotFound(err) || err == nil && !catalyst.ProjectAllows(p, s.env.Namespace)) {
		return projectNotAllowed(s, key) // Checked on every reconcile: a Project may take its allowance back.
	}
	switch {
	case apierrors.IsNotFound(err):
		s.Refuse(catalystv1.ConditionNamespaceReady, catalystv1.ReasonProjectNotFound,
			fmt.Sprintf("Project %s named by spec.projectRef does not exist in namespace %s", key.Name, key.Namespace))
		return ctrl.Result{}, nil
	case err != nil:
		s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting, "the Project could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read project %s: %w", key, err)
	case !p.DeletionTimestamp.IsZero():
		s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionFalse, catalystv1.ReasonProjectDeleting,
			fmt.Sprintf("Project %s/%s is being deleted, and its environments with it", key.Namespace, key.Name))
		return ctrl.Result{}, nil
	}
	if err := catalyst.CheckProject(p, r.Defaults); err != nil {
		// The administrator's limits: nothing is made for a Project beyond them, not even the namespace.
		s.Refuse(catalystv1.ConditionNamespaceReady, catalystv1.ReasonProjectLimitExceeded,
			fmt.Sprintf("Project %s/%s asks for more than the operator allows: %v", p.Namespace, p.Name, err))
		return ctrl.Result{}, nil
	}
	s.project = p
	s.settings = catalyst.SettingsFor(p, r.Defaults)
	return ctrl.Result{}, nil
}

// reconcileNamespace makes the environment's namespace and locks it down. A namespace of that name that
// the operator did not make for this very Environment is never adopted, labelled or deleted: the
// environment reports NamespaceConflict (with a Warning event the first time: s.Refuse) and is tried again
// after reconcile.ConflictRetry (the namespace in the way is not the operator's, so its deletion sends no
// event the operator sees).
func (r *EnvironmentReconciler) reconcileNamespace(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	if s.project == nil {
		return ctrl.Result{}, nil
	}
	name := s.namespaceName()
	conflict := func(why string) (ctrl.Result, error) {
		s.Refuse(catalystv1.ConditionNamespaceReady, catalystv1.ReasonNamespaceConflict,
			fmt.Sprintf("namespace %s %s; it is left untouched", name, why))
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
	}
	if catalyst.Reserved(name) {
		return conflict("is reserved for the cluster (default, kube-*, openshift-*)")
	}
	live := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, live)
	if apierrors.IsNotFound(err) {
		// The cache holds only the operator's namespaces: one more read to be sure the name is free.
		err = r.APIReader.Get(ctx, client.ObjectKey{Name: name}, live)
	}
	absent := apierrors.IsNotFound(err)
	switch {
	case absent:
	case err != nil:
		s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting, "the namespace could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read namespace %s: %w", name, err)
	case !catalyst.OwnedBy(live, s.env.UID):
		return conflict(catalyst.OwnerOf(live))
	case !live.DeletionTimestamp.IsZero():
		// Ours, from before: its deletion event wakes the reconciler, which then makes it anew.
		s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionFalse, catalystv1.ReasonNamespaceTerminating,
			fmt.Sprintf("namespace %s is being deleted; it is made again once it is gone", name))
		return ctrl.Result{}, nil
	}

	children := []client.Object{
		catalyst.NamespaceFor(s.env, s.parts, name, s.settings),
		catalyst.ResourceQuotaFor(s.env, name, s.settings),
		catalyst.LimitRange(s.env, name, s.settings.Quota),
		catalyst.NetworkPolicy(s.env, name, s.settings.IngressNamespace, s.settings.Egress),
	}
	children = append(children, r.tenantChildren(s, name)...)
	if absent {
		if res, err := r.createNamespace(ctx, s, children[0]); err != nil || res.RequeueAfter > 0 {
			return res, err
		}
		children = children[1:]
	}
	for _, c := range children {
		if ok, res, err := s.Apply(ctx, c, catalystv1.ConditionNamespaceReady); !ok {
			return res, err
		}
	}
	s.namespace = name
	s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionTrue, catalystv1.ReasonApplied,
		fmt.Sprintf("namespace %s with ResourceQuota, LimitRange and NetworkPolicy %s, and the tenant ServiceAccount %s bound to ClusterRole %s%s",
			name, catalyst.QuotaName, catalyst.TenantServiceAccountName, r.tenantClusterRole(), r.policies.enforcement()))
	return ctrl.Result{}, nil
}

// createNamespace creates the environment's namespace with a create request, which fails when the name
// is taken, rather than with an apply, which would take over a namespace another Environment's reconcile
// created between this one's read and its write. Later reconciles apply it like any child (a field the
// create set and a later spec no longer asks for stays: the create's field manager entry keeps owning it;
// the namespace labels it sets are derived from labels that rarely change, and are never removed).
func (r *EnvironmentReconciler) createNamespace(ctx context.Context, s *environmentScope, ns client.Object) (ctrl.Result, error) {
	u, err := apply.ToUnstructured(ns)
	if err != nil {
		return ctrl.Result{}, err
	}
	err = r.Client.Create(ctx, u, client.FieldOwner(oplabels.FieldOwner))
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made by someone else a moment ago: the next reconcile reads whose it is.
		s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionUnknown, catalystv1.ReasonWaiting,
			fmt.Sprintf("namespace %s appeared while it was being created; checking whose it is", ns.GetName()))
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionUnknown, catalystv1.ReasonApplyFailed, err.Error())
		return ctrl.Result{}, fmt.Errorf("create namespace %s: %w", ns.GetName(), err)
	}
	s.Normalf(reconcile.EventCreated, "Created Namespace %s", ns.GetName())
	return ctrl.Result{}, nil
}

// reconcileIngress applies the environment's Certificate and Ingress; status.url is set once the
// certificate is issued.
func (r *EnvironmentReconciler) reconcileIngress(ctx context.Context, s *environmentScope) (ctrl.Result, error) {
	s.status.URL = ""
	if s.waiting(catalystv1.ConditionIngressReady) {
		return ctrl.Result{}, nil
	}
	ns := s.namespace
	host := catalyst.Host(ns, s.settings.Domain)
	wantTLS := s.settings.Issuer.Name != ""
	tls := wantTLS && r.Capabilities.CertManager
	var cert *cmv1.Certificate
	if tls {
		cert = catalyst.Certificate(s.env, ns, host, s.settings)
		if ok, res, err := s.Apply(ctx, cert, catalystv1.ConditionIngressReady); !ok {
			return res, err
		}
	}
	if ok, res, err := s.Apply(ctx, catalyst.Ingress(s.env, ns, host, s.settings, tls), catalystv1.ConditionIngressReady); !ok {
		return res, err
	}
	switch {
	case wantTLS && !tls:
		s.MissingAPI(catalystv1.ConditionIngressReady, fmt.Sprintf(
			"Ingress %s serves %s over plain http: issuer %s needs cert-manager, which this cluster does not serve",
			catalyst.IngressName, host, s.settings.Issuer.Name))
	case tls:
		if ready := reconcile.CertificateReady(cert); !ready.Ready {
			s.Set(catalystv1.ConditionIngressReady, metav1.ConditionFalse, catalystv1.ReasonCertificatePending,
				fmt.Sprintf("Certificate %s for %s: %s", catalyst.CertificateName, host, ready.Message))
			return ctrl.Result{}, nil
		}
		s.status.URL = catalyst.URL(host, true)
		s.Set(catalystv1.ConditionIngressReady, metav1.ConditionTrue, catalystv1.ReasonReady,
			fmt.Sprintf("Ingress %s serves %s with the certificate %s issued", catalyst.IngressName, host, catalyst.CertificateName))
	default:
		s.status.URL = catalyst.URL(host, false)
		s.Set(catalystv1.ConditionIngressReady, metav1.ConditionTrue, catalystv1.ReasonApplied,
			fmt.Sprintf("Ingress %s serves %s over plain http: no issuer is configured", catalyst.IngressName, host))
	}
	return ctrl.Result{}, nil
}
