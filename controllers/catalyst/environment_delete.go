package catalyst

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// finalize deletes the namespaces the operator made for a deleted Environment and releases the
// Environment once they are gone. It needs neither the Project, nor the labels, nor status.namespace:
// the namespaces are found by the owner UID annotation the operator put on them. A namespace that is
// already gone is success; one the operator did not make for this Environment is never deleted.
func (r *EnvironmentReconciler) finalize(ctx context.Context, env *catalystv1.Environment) (ctrl.Result, error) {
	if !r.finalizer.Has(env) {
		return ctrl.Result{}, nil
	}
	s := r.newEnvironmentScope(env)
	owned, err := r.ownedNamespaces(ctx, env)
	if err != nil {
		return ctrl.Result{}, err
	}
	var remaining []string
	for i := range owned {
		ns := &owned[i]
		remaining = append(remaining, ns.Name)
		if !ns.DeletionTimestamp.IsZero() {
			continue
		}
		err := r.Client.Delete(ctx, ns, client.Preconditions{UID: ptr.To(ns.UID)})
		if apierrors.IsNotFound(err) {
			remaining = remaining[:len(remaining)-1]
			continue
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("delete namespace %s: %w", ns.Name, err)
		}
		s.Normalf(catalystv1.EventNamespaceDeleted, "Deleted namespace %s with the Environment", ns.Name)
	}
	if len(remaining) > 0 {
		// The namespace controller empties and removes them; each one's deletion event wakes us.
		msg := fmt.Sprintf("the Environment is being deleted: waiting for namespace %s to be gone", strings.Join(remaining, ", "))
		s.Set(catalystv1.ConditionNamespaceReady, metav1.ConditionFalse, catalystv1.ReasonDeleting, msg)
		s.Set(catalystv1.ConditionReady, metav1.ConditionFalse, catalystv1.ReasonDeleting, msg)
		return ctrl.Result{}, r.status.Write(ctx, env, s.status)
	}
	if err := r.finalizer.Release(ctx, env); err != nil {
		return ctrl.Result{}, err
	}
	r.status.Forget(client.ObjectKeyFromObject(env))
	return ctrl.Result{}, nil
}

// ownedNamespaces are the namespaces the operator made for env: those in the cache carrying its UID, and
// (read from the API server, should the cache lag) its status.namespace and derived name when they do.
func (r *EnvironmentReconciler) ownedNamespaces(ctx context.Context, env *catalystv1.Environment) ([]corev1.Namespace, error) {
	var list corev1.NamespaceList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{oplabels.ManagedByLabel: oplabels.OperatorName}); err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var out []corev1.Namespace
	for _, ns := range list.Items {
		if catalyst.OwnedBy(&ns, env.UID) {
			out = append(out, ns)
		}
	}
	var errs []error
	for _, name := range namespacesOf(env) {
		if slices.ContainsFunc(out, func(ns corev1.Namespace) bool { return ns.Name == name }) {
			continue
		}
		ns := corev1.Namespace{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, &ns)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("read namespace %s: %w", name, err))
		case catalyst.OwnedBy(&ns, env.UID):
			out = append(out, ns)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}
