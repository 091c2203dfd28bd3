package catalyst

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// The tenant's identity in an environment's namespace. Everything that comes from a tenant's repository
// (Helm install, upgrade, rollback, hooks and lookup; manifest and kustomize applies; pruning) is sent by a
// client that impersonates this ServiceAccount, so the API server's RBAC and Pod Security admission decide
// what a repository may do, not only the operator's own checks.
const (
	// TenantServiceAccountName names the ServiceAccount the operator impersonates in an environment's
	// namespace, and the RoleBinding that gives it the tenant ClusterRole there.
	TenantServiceAccountName = "catalyst-deployer"
	// DefaultTenantClusterRole is the ClusterRole bound to the tenant ServiceAccount when the operator's
	// --catalyst-tenant-cluster-role names none: config/rbac/catalyst_tenant_role.yaml, which OLM installs
	// with the bundle (kustomize's name prefix included).
	DefaultTenantClusterRole = "platform-operator-catalyst-tenant"
)

// TenantUser is the user name the API server knows the tenant ServiceAccount of namespace ns by: what a
// client impersonates to act as the tenant.
func TenantUser(ns string) string {
	return fmt.Sprintf("system:serviceaccount:%s:%s", ns, TenantServiceAccountName)
}

// TenantServiceAccount is the ServiceAccount the operator impersonates in the environment's namespace. It
// mounts no token into pods: it is an identity for the operator's requests, not for the application's
// pods (a pod that names it gets no credentials from it).
func TenantServiceAccount(env *catalystv1.Environment, ns string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   objectMeta(env, ns, TenantServiceAccountName),
		AutomountServiceAccountToken: ptr.To(false),
	}
}

// TenantRoleBinding binds the tenant ServiceAccount to clusterRole inside the environment's namespace
// only: a RoleBinding grants a ClusterRole's rules in its own namespace and nowhere else.
func TenantRoleBinding(env *catalystv1.Environment, ns, clusterRole string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: objectMeta(env, ns, TenantServiceAccountName),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Name: TenantServiceAccountName, Namespace: ns,
		}},
	}
}
