package catalyst

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
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
func (r *deployReconciler) tenantClient(ns string) (client.Client, error) {
	c, err := client.New(tenantConfig(r.deploy.restConfig, ns), client.Options{Scheme: r.Client.Scheme(), Mapper: r.deploy.mapper})
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

// The slim transforms of the tenant identity's objects: they are only ever applied.
var (
	slimServiceAccount = apply.Slim(oplabels.FieldOwner, func(sa *corev1.ServiceAccount) any { return &sa.AutomountServiceAccountToken },
		func(sa *corev1.ServiceAccount) {
			sa.AutomountServiceAccountToken = nil
			sa.Secrets = nil
			sa.ImagePullSecrets = nil
		})
	slimRoleBinding = apply.Slim(oplabels.FieldOwner, func(rb *rbacv1.RoleBinding) any { return []any{&rb.RoleRef, &rb.Subjects} },
		func(rb *rbacv1.RoleBinding) { rb.RoleRef = rbacv1.RoleRef{}; rb.Subjects = nil })
)
