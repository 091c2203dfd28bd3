package catalyst

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/manager"
	"github.com/platform-operator/platform-operator/internal/reconcile"
)

// The Environment's status has three writers, each applying its own fields and conditions under a field
// manager of its own, so that none removes what another wrote: the Environment reconciler (the
// namespace, the Ingress, the expiry, and Ready and the phase that sum up all parts), the build and the
// deploy.
const (
	// environmentFieldOwner is the field manager of the Environment reconciler's part of the status. It
	// is also the manager that wrote the whole status before the build and the deploy had their own.
	environmentFieldOwner = manager.FieldOwner + "/environment"
	// buildFieldOwner is the field manager of the build's part of the status.
	buildFieldOwner = manager.FieldOwner + "/environment-build"
	// deployFieldOwner is the field manager of the deploy's part of the status.
	deployFieldOwner = manager.FieldOwner + "/environment-deploy"
)

// What each writer owns of the status: top-level fields by JSON name, and condition types.
var (
	environmentFields     = []string{"phase", "url", "namespace", "observedGeneration", "expiresAt"}
	environmentConditions = []string{catalystv1.ConditionReady, catalystv1.ConditionNamespaceReady, catalystv1.ConditionIngressReady}
	buildFields           = []string{"build"}
	buildConditions       = []string{catalystv1.ConditionBuildReady}
	deployFields          = []string{"deployment"}
	deployConditions      = []string{catalystv1.ConditionDeploymentReady}
)

// claimingWriter is a reconcile.StatusWriter that sends its first write of each Environment in this
// process even when the status already shows what it owns. An Environment written by an operator from
// before the split has its whole status owned by environmentFieldOwner; had the Environment reconciler
// written first, dropping status.build from its apply would have removed it (no other manager owned it
// yet), and with it the memory of a failed build or of the deployed inputs. The build and deploy
// writers' first applies make them co-owners, after which the Environment reconciler's own first
// apply releases what it no longer owns. An apply that changes nothing is no write at the API server.
type claimingWriter struct {
	*reconcile.StatusWriter
	// claimed is, by Environment, the UID this writer has written once.
	claimed sync.Map
}

func newClaimingWriter(c client.Client, owner string, fields, conditions []string) *claimingWriter {
	return &claimingWriter{StatusWriter: &reconcile.StatusWriter{Client: c, FieldOwner: owner, Fields: fields, Conditions: conditions}}
}

// Write writes what the writer owns of desired (see reconcile.StatusWriter.Write).
func (w *claimingWriter) Write(ctx context.Context, env *catalystv1.Environment, desired *catalystv1.EnvironmentStatus) error {
	key := client.ObjectKeyFromObject(env)
	var live client.Object = env
	if uid, ok := w.claimed.Load(key); !ok || uid != env.UID {
		unowned, err := w.withoutOwned(env)
		if err != nil {
			return err
		}
		live = unowned
	}
	if err := w.StatusWriter.Write(ctx, live, desired); err != nil {
		return err
	}
	w.claimed.Store(key, env.UID)
	return nil
}

// Forget drops what the writer remembers of an Environment that is gone.
func (w *claimingWriter) Forget(key types.NamespacedName) {
	w.claimed.Delete(key)
	w.StatusWriter.Forget(key)
}

// withoutOwned is env without the status fields and conditions the writer owns: what the writer compares
// its status with to send it whatever the Environment shows.
func (w *claimingWriter) withoutOwned(env *catalystv1.Environment) (client.Object, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(env)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(catalystv1.GroupVersion.WithKind("Environment"))
	status, _ := m["status"].(map[string]any)
	for _, f := range w.Fields {
		delete(status, f)
	}
	if conds, ok := status["conditions"].([]any); ok {
		status["conditions"] = slices.DeleteFunc(conds, func(c any) bool {
			t, _ := c.(map[string]any)["type"].(string)
			return slices.Contains(w.Conditions, t)
		})
	}
	return u, nil
}
