package catalyst

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

func TestTenantIdentity(t *testing.T) {
	env, _ := fixture()
	const ns = "my-team-my-project-pr-123"
	if got, want := TenantUser(ns), "system:serviceaccount:my-team-my-project-pr-123:catalyst-deployer"; got != want {
		t.Errorf("TenantUser = %q, want %q", got, want)
	}
	sa := TenantServiceAccount(env, ns)
	if sa.Namespace != ns || sa.Name != TenantServiceAccountName {
		t.Errorf("ServiceAccount %s/%s, want %s/%s", sa.Namespace, sa.Name, ns, TenantServiceAccountName)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("the tenant ServiceAccount must not mount a token into pods that name it")
	}
	if !labels.IsManaged(sa.Labels) {
		t.Errorf("ServiceAccount labels %v lack the operator's managed-by label", sa.Labels)
	}

	tests := []struct {
		name, role string
	}{
		{"default role", DefaultTenantClusterRole},
		{"administrator's role", "team-apps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rb := TenantRoleBinding(env, ns, tt.role)
			if rb.Namespace != ns {
				t.Errorf("RoleBinding in %q, want the environment's namespace %q", rb.Namespace, ns)
			}
			if rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: tt.role}) {
				t.Errorf("roleRef = %+v", rb.RoleRef)
			}
			if len(rb.Subjects) != 1 || rb.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Name: TenantServiceAccountName, Namespace: ns}) {
				t.Errorf("subjects = %+v, want only the tenant ServiceAccount of %s", rb.Subjects, ns)
			}
		})
	}
}
