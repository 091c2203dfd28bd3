package catalyst

import (
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The Environment's status is computed by three parts of one reconcile, each setting only the fields and
// conditions listed for it here: the Environment reconciler (the namespace, the Ingress, the expiry, and
// Ready and the phase that sum up all parts), the build and the deploy. It is written once, after all three
// ran, by one writer under one field manager. Three writers under three field managers (tried before) cost
// three status writes for every new Environment where one does the same work, and the status subresource
// is the operator's alone, so no other manager's fields need protecting from a part's apply.
const environmentFieldOwner = oplabels.FieldOwner + "/environment"

// What each part owns of the status: top-level fields by JSON name, and condition types.
var (
	environmentFields     = []string{"phase", "url", "namespace", "observedGeneration", "expiresAt"}
	environmentConditions = []string{catalystv1.ConditionReady, catalystv1.ConditionNamespaceReady, catalystv1.ConditionIngressReady}
	buildFields           = []string{"build"}
	buildConditions       = []string{catalystv1.ConditionBuildReady}
	deployFields          = []string{"deployment"}
	deployConditions      = []string{catalystv1.ConditionDeploymentReady}
)

// newStatusWriter is the one writer of an Environment's status: every part's fields and conditions.
func newStatusWriter(c client.Client) *reconcile.StatusWriter {
	return &reconcile.StatusWriter{Client: c, FieldOwner: environmentFieldOwner,
		Fields:     slices.Concat(environmentFields, buildFields, deployFields),
		Conditions: slices.Concat(environmentConditions, buildConditions, deployConditions)}
}
