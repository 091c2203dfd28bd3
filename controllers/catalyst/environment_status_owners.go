package catalyst

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The Environment's status has three writers, each applying its own fields and conditions under a field
// manager of its own, so that none removes what another wrote: the Environment reconciler (the
// namespace, the Ingress, the expiry, and Ready and the phase that sum up all parts), the build and the
// deploy.
const (
	// environmentFieldOwner is the field manager of the Environment reconciler's part of the status. It
	// is also the manager that wrote the whole status before the build and the deploy had their own.
	environmentFieldOwner = oplabels.FieldOwner + "/environment"
	// buildFieldOwner is the field manager of the build's part of the status.
	buildFieldOwner = oplabels.FieldOwner + "/environment-build"
	// deployFieldOwner is the field manager of the deploy's part of the status.
	deployFieldOwner = oplabels.FieldOwner + "/environment-deploy"
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

// statusClaims moves, once per Environment and operator process, each writer's part of the status to
// that writer's field manager, before the steps run. An Environment written by an operator from before
// the split has its whole status owned by environmentFieldOwner: had the Environment reconciler written
// first, dropping status.build from its apply would have removed it (no other manager owned it yet), and
// with it the memory of a failed build or of the deployed inputs. The build and deploy writers each apply
// their part as the Environment shows it, which makes them co-owners; the Environment reconciler's writer
// then applies its own part, which releases the rest. On an Environment whose owners are already right,
// these applies change nothing (no write at the API server); one without a status sends none.
type statusClaims struct {
	// writers are the writers in the order they claim: the Environment reconciler's last.
	writers []*reconcile.StatusWriter
	// claimed is, by Environment, the UID whose status was claimed.
	claimed sync.Map
}

// claim claims env's status for every writer, once per UID.
func (c *statusClaims) claim(ctx context.Context, env *catalystv1.Environment) error {
	key := client.ObjectKeyFromObject(env)
	if uid, ok := c.claimed.Load(key); ok && uid == env.UID {
		return nil
	}
	if !c.legacy(env) {
		// Each part already has its writer (or there is no status yet): nothing to move, and no request,
		// so an operator restart sends no status write for an Environment that did not change.
		c.claimed.Store(key, env.UID)
		return nil
	}
	for _, w := range c.writers {
		unowned, err := withoutOwned(w, env)
		if err != nil {
			return err
		}
		// Compared with env without the writer's part, the part env shows is always sent.
		if err := w.Write(ctx, unowned, &env.Status); err != nil {
			return fmt.Errorf("claim status for %s: %w", w.FieldOwner, err)
		}
	}
	c.claimed.Store(key, env.UID)
	return nil
}

// legacy reports whether the last writer (the Environment reconciler's field manager, which wrote the
// whole status before the split) owns any field or condition of another writer on env: only then is
// there something to move.
func (c *statusClaims) legacy(env *catalystv1.Environment) bool {
	last := c.writers[len(c.writers)-1]
	for _, e := range env.ManagedFields {
		if e.Manager != last.FieldOwner || e.Subresource != "status" || e.FieldsV1 == nil {
			continue
		}
		raw := string(e.FieldsV1.Raw)
		for _, w := range c.writers[:len(c.writers)-1] {
			for _, f := range w.Fields {
				if strings.Contains(raw, `"f:`+f+`"`) {
					return true
				}
			}
			for _, t := range w.Conditions {
				if strings.Contains(raw, `\"type\":\"`+t+`\"`) {
					return true
				}
			}
		}
	}
	return false
}

// forget drops what the claims remember of an Environment that is gone.
func (c *statusClaims) forget(key types.NamespacedName) {
	c.claimed.Delete(key)
	for _, w := range c.writers {
		w.Forget(key)
	}
}

func newStatusWriter(c client.Client, owner string, fields, conditions []string) *reconcile.StatusWriter {
	return &reconcile.StatusWriter{Client: c, FieldOwner: owner, Fields: fields, Conditions: conditions}
}

// withoutOwned is env without the status fields and conditions w owns.
func withoutOwned(w *reconcile.StatusWriter, env *catalystv1.Environment) (client.Object, error) {
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
