package catalyst

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
)

// projectNotAllowedMessage says that the Project key does not let Environments of envNamespace use it.
// The webhook and the controller say the same, and say it too of a Project that does not exist in
// another namespace: a tenant must not learn which Projects other namespaces hold by probing names.
func projectNotAllowedMessage(key client.ObjectKey, envNamespace string) string {
	return fmt.Sprintf("Project %s/%s does not allow Environments of namespace %s (spec.allowedEnvironmentNamespaces)",
		key.Namespace, key.Name, envNamespace)
}

// projectNotAllowed holds an environment whose Project, in another namespace, does not allow it: nothing
// is built, deployed or applied with that Project (s.project stays nil, so every later step waits), and
// a namespace the environment already has is kept as it is (summarize keeps status.namespace). A user
// mistake: a condition, a Warning event when the condition says something new (s.Refuse), and no retry (the
// Project's change of its list wakes the environment).
func projectNotAllowed(s *environmentScope, key client.ObjectKey) (ctrl.Result, error) {
	s.Refuse(catalystv1.ConditionNamespaceReady, catalystv1.ReasonProjectNotAllowed, projectNotAllowedMessage(key, s.env.Namespace))
	return ctrl.Result{}, nil
}
