package catalyst

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// The operator acts as the tenant for everything that comes from a tenant's repository: it needs to
// impersonate the tenant ServiceAccount of each environment namespace, and to bind the tenant ClusterRole
// to it there (bind lets it grant a role it does not hold itself; the API server refuses any other).
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate,resourceNames=catalyst-deployer
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=platform-operator-catalyst-tenant

// tenantConfig is the operator's rest.Config impersonating the tenant ServiceAccount of namespace ns:
// every request made with it is authorized by the API server as that ServiceAccount (its groups
// system:serviceaccounts and system:serviceaccounts:<ns> included), through the RoleBinding the operator
// made in ns and nothing else.
func tenantConfig(base *rest.Config, ns string) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: catalyst.TenantUser(ns)}
	return cfg
}

// tenantClient is a direct (uncached) client acting as the tenant of namespace ns. client-go shares the
// underlying TLS transport among configs that differ only in impersonation, so making one per deploy
// opens no new connections.
func (r *deployPhase) tenantClient(ns string) (client.Client, error) {
	c, err := client.New(tenantConfig(r.restConfig, ns), client.Options{Scheme: r.Client.Scheme(), Mapper: r.mapper})
	if err != nil {
		return nil, fmt.Errorf("client for the tenant of namespace %s: %w", ns, err)
	}
	return c, nil
}

// tenantChildren are the ServiceAccount the operator impersonates in an environment's namespace and the
// RoleBinding that gives it the tenant ClusterRole there. The operator makes them itself, as it does the
// namespace's quota and policy.
func (r *EnvironmentReconciler) tenantChildren(s *environmentScope, ns string) []client.Object {
	return []client.Object{
		catalyst.TenantServiceAccount(s.env, ns),
		catalyst.TenantRoleBinding(s.env, ns, r.tenantClusterRole()),
	}
}

// tenantClusterRole is the ClusterRole the tenant ServiceAccounts are bound to.
func (r *EnvironmentReconciler) tenantClusterRole() string {
	if r.Deploy.TenantClusterRole != "" {
		return r.Deploy.TenantClusterRole
	}
	return catalyst.DefaultTenantClusterRole
}

// The operator keeps the admission policies that make the API server enforce, for everyone in an
// environment namespace, what its render guard checks on a repository (internal/catalyst/admissionpolicy.go).
// OLM bundles cannot ship ValidatingAdmissionPolicies, so the operator applies them itself: it may read and
// write those names only.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;create;patch,resourceNames=platform-operator-catalyst-hosts;platform-operator-catalyst-services;platform-operator-catalyst-identity

// AdmissionPolicyInterval is how often the operator re-applies the admission policies after start: a
// policy someone deleted or changed is restored within it.
const AdmissionPolicyInterval = 10 * time.Minute

// admissionPolicies applies catalyst.AdmissionPolicies at start (as the leader) and every
// AdmissionPolicyInterval, with server-side apply under the operator's field owner. It uses an uncached
// client of its own: it reads only its own objects, by name, which the ClusterRole allows without list or
// watch.
type admissionPolicies struct {
	client client.Client
	log    logr.Logger
	// served is whether the API server serves ValidatingAdmissionPolicies (discovered at setup).
	served bool
}

// newAdmissionPolicies discovers whether the cluster serves ValidatingAdmissionPolicy and its binding.
func newAdmissionPolicies(cfg *rest.Config, opts client.Options) (*admissionPolicies, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	served, err := servesAdmissionPolicies(dc)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &admissionPolicies{client: c, served: served, log: ctrl.Log.WithName("catalyst").WithName("admission-policies")}, nil
}

// servesAdmissionPolicies says whether admissionregistration.k8s.io/v1 serves both policy kinds
// (Kubernetes 1.30 and later).
func servesAdmissionPolicies(dc discovery.DiscoveryInterface) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", admissionregistrationv1.SchemeGroupVersion, err)
	}
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	return slices.Contains(names, "validatingadmissionpolicies") && slices.Contains(names, "validatingadmissionpolicybindings"), nil
}

// notServedMessage is what the operator says where the cluster serves no ValidatingAdmissionPolicy.
const notServedMessage = "this cluster serves no admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.30 or later): " +
	"only the operator's own guard checks hosts, issuers, Services and the deployer identity, for what it deploys and nothing else " +
	"(docs/catalyst.md, Threat model, says what an administrator must do)"

// enforcement is the sentence the NamespaceReady condition ends with: who enforces the namespace's rules.
func (a *admissionPolicies) enforcement() string {
	if a == nil || !a.served {
		return "; " + notServedMessage
	}
	return "; the API server enforces its hosts, issuers, Services and identity rules for everyone (ValidatingAdmissionPolicies " +
		strings.Join(catalyst.PolicyNames, ", ") + ")"
}

// Start applies the policies, then again every AdmissionPolicyInterval until ctx ends; failures are
// logged and retried sooner.
func (a *admissionPolicies) Start(ctx context.Context) error {
	if !a.served {
		a.log.Error(errors.New("ValidatingAdmissionPolicy is not served"), notServedMessage)
		return nil
	}
	for {
		wait := AdmissionPolicyInterval
		if err := a.ensure(ctx); err != nil {
			a.log.Error(err, "applying the catalyst admission policies failed; retrying", "policies", catalyst.PolicyNames)
			wait = 10 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// ensure applies every policy and binding; one of the same name the operator did not make is left alone
// and reported.
func (a *admissionPolicies) ensure(ctx context.Context) error {
	var errs []error
	for _, obj := range catalyst.AdmissionPolicies() {
		live := obj.DeepCopyObject().(client.Object)
		switch err := a.client.Get(ctx, client.ObjectKeyFromObject(obj), live); {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("read %T %s: %w", obj, obj.GetName(), err))
			continue
		case !oplabels.IsManaged(live.GetLabels()):
			errs = append(errs, fmt.Errorf("%T %s was not made by the operator (it lacks the label %s=%s): it is left alone, and the namespaces are not protected by it",
				obj, obj.GetName(), oplabels.ManagedByLabel, oplabels.OperatorName))
			continue
		}
		u, err := apply.ToUnstructured(obj)
		if err != nil {
			return err
		}
		if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(oplabels.FieldOwner), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err))
		}
	}
	return errors.Join(errs...)
}
