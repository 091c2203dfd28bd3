package bundle

import (
	"slices"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// broadGrants are the grants among rules that the operator needs nowhere (docs/homelab.md, "Domain" RBAC; the
// catalyst build log): deleting Secrets (a Domain's TLS Secret goes with its Certificate by an owner
// reference) and reading pod logs (a failed build's log is the pod's termination message).
func broadGrants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		if !slices.Contains(r.APIGroups, "") && !slices.Contains(r.APIGroups, "*") {
			continue
		}
		for _, res := range r.Resources {
			switch {
			case (res == "secrets" || res == "*") && (slices.Contains(r.Verbs, "delete") || slices.Contains(r.Verbs, "deletecollection") || slices.Contains(r.Verbs, "*")):
				out = append(out, "delete secrets: "+ruleString(r))
			case res == "pods/log" || res == "pods/*" || (res == "*" && len(r.Verbs) > 0):
				out = append(out, "pods/log: "+ruleString(r))
			}
		}
	}
	return out
}

// TestManagerRoleNarrowed: neither the generated ClusterRole nor the CSV's permissions delete Secrets or
// read pod logs; the check finds both in the rules the operator had before (the control).
func TestManagerRoleNarrowed(t *testing.T) {
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(readFile(t, "config/rbac/role.yaml"), role); err != nil {
		t.Fatal(err)
	}
	spec := loadCSV(t).Spec.InstallStrategy.StrategySpec
	rules := slices.Clone(role.Rules)
	for _, p := range slices.Concat([]operatorsv1alpha1.StrategyDeploymentPermissions{}, spec.Permissions, spec.ClusterPermissions) {
		rules = append(rules, p.Rules...)
	}
	for _, g := range broadGrants(rules) {
		t.Error(g)
	}
	before := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "secrets"}, Verbs: []string{"create", "delete", "get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}
	if got := broadGrants(before); len(got) != 2 {
		t.Errorf("the operator's former rules give %q, want both grants found", got)
	}
}
