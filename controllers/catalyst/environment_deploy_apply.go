package catalyst

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// deployObjects applies manifest and kustomize objects as the tenant, then prunes what the previous
// inventory held and this one does not. The whole set is first sent as a server-side dry run: one object
// the API server refuses (RBAC, admission, quota, validation) refuses the commit before anything of it is
// written, so a commit is applied whole or not at all. Should a real apply still fail midway (the cluster
// changed in between), the inventory keeps every object applied so far, so a later commit prunes them.
func (r *deployPhase) deployObjects(ctx context.Context, s *environmentScope, in *deployInput, rd *rendered, st *catalystv1.DeploymentStatus) (ctrl.Result, error) {
	objs := rd.objs
	if _, ok, res, err := r.applyObjects(ctx, s, objs, true); !ok {
		return res, err
	}
	before := st.Inventory
	changed, ok, res, err := r.applyObjects(ctx, s, objs, false)
	if !ok {
		st.Inventory = mergeInventory(before, inventoryOf(objs[:changed.attempted]))
		return res, err
	}
	inventory := inventoryOf(objs)
	pruned, err := r.prune(ctx, s, before, inventory)
	st.Inventory, st.Objects = inventory, int32(len(objs))
	if err != nil {
		return ctrl.Result{}, err
	}
	r.remember(s.env, rd)
	if changed.written > 0 || pruned > 0 {
		s.Normalf(catalystv1.EventDeployed, "Deployed commit %s (%s %s): %d objects applied, %d changed, %d pruned",
			shortCommit(in.req.Commit), in.typ, in.Path, len(objs), changed.written, pruned)
	}
	return r.reportReady(ctx, s, objs)
}

// inventoryOf is the inventory entry of each object.
func inventoryOf(objs []*unstructured.Unstructured) []catalystv1.DeployedObject {
	out := make([]catalystv1.DeployedObject, 0, len(objs))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		out = append(out, catalystv1.DeployedObject{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Name: o.GetName()})
	}
	return out
}

// mergeInventory is before with the entries of add it lacks, bounded like the inventory in status.
func mergeInventory(before, add []catalystv1.DeployedObject) []catalystv1.DeployedObject {
	out := append([]catalystv1.DeployedObject(nil), before...)
	for _, a := range add {
		found := false
		for _, b := range before {
			if b.Group == a.Group && b.Kind == a.Kind && b.Name == a.Name {
				found = true
				break
			}
		}
		if !found && len(out) < render.MaxObjects {
			out = append(out, a)
		}
	}
	return out
}

// applyCount is what applyObjects did: how many objects it sent a request for (the last one perhaps
// refused), and how many of them it changed.
type applyCount struct {
	attempted, written int
}

// applyObjects applies each object as the tenant through the kit's Applier (reading it first: one that
// already holds every field is not written; a new one is sent create-only, so one that someone made a
// moment ago under that name is never taken over; one of that name the operator did not make is left
// untouched), or with dryRun only asks the API server whether it would accept each. ok is false when one
// was refused or failed: the condition says which and why, in the kit's classification with the deploy's
// wording of a refusal.
func (r *deployPhase) applyObjects(ctx context.Context, s *environmentScope, objs []*unstructured.Unstructured, dryRun bool) (applyCount, bool, ctrl.Result, error) {
	var n applyCount
	opts := apply.Options{Writer: s.tenant, DryRun: dryRun, Live: func(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
		return r.readLive(ctx, s, gvk, key)
	}}
	for _, o := range objs {
		n.attempted++
		// A copy: the Applier annotates the object it is given, and o is kept to repair drift with.
		result, err := s.Applier.ApplyWith(ctx, s.env, o.DeepCopy(), opts)
		if err != nil {
			res, err := s.ApplyFailed(catalystv1.ConditionDeploymentReady, o, err, reconcile.Refusal{
				Message: func(err error) string { return refusalMessage(o, s.namespace, dryRun, err) },
				Observe: func(err error) { instruments.Refused(instruments.RefusalCheck(err, dryRun)) },
			})
			return n, false, res, err
		}
		if result != apply.Unchanged && !dryRun {
			ctrl.LoggerFrom(ctx).V(1).Info("applied a deployed object", "object", render.Describe(o), "result", result)
			n.written++
		}
	}
	return n, true, ctrl.Result{}, nil
}

// refusalMessage says which object the API server refused, for whom, with which verb, and why.
func refusalMessage(o *unstructured.Unstructured, ns string, dryRun bool, err error) string {
	verb := "apply (patch)"
	if apierrors.IsForbidden(err) {
		verb = "apply (patch) as " + catalyst.TenantUser(ns)
	}
	what := "was refused by the API server"
	if dryRun {
		what = "was refused by the API server in a dry run; nothing of the commit was applied"
	}
	return fmt.Sprintf("%s %s: %s: %v", render.Describe(o), what, verb, err)
}

// readLive reads an object: a watched kind from the operator's cache (it holds what the operator labelled;
// an object it lacks is read from the API server, to not take over someone else's), any other kind from
// the API server as the tenant, so that no informer is started for a kind a repository happens to hold
// and the operator needs no read access of its own to the kinds a repository may hold.
func (r *deployPhase) readLive(ctx context.Context, s *environmentScope, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
	if typed := watchedObject(gvk, r.Client.Scheme()); typed != nil {
		err := r.Client.Get(ctx, key, typed)
		if err == nil {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
			if err != nil {
				return nil, err
			}
			// The cache's typed objects carry no TypeMeta.
			u := &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(gvk)
			return u, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := s.tenant.Get(ctx, key, u); err != nil {
		return nil, err
	}
	return u, nil
}

// watchedObject is an empty typed object of gvk when it is a watched kind, else nil.
func watchedObject(gvk schema.GroupVersionKind, scheme *runtime.Scheme) client.Object {
	for _, k := range watchedKinds {
		kgvk, err := apiGVK(k, scheme)
		if err == nil && kgvk == gvk {
			return k.DeepCopyObject().(client.Object)
		}
	}
	return nil
}

func apiGVK(obj client.Object, scheme *runtime.Scheme) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", obj, err)
	}
	return gvks[0], nil
}

// prune deletes, as the tenant, the objects of the previous inventory the new one does not hold, when they
// still carry the operator's labels for this environment (an object someone else made, or took over by
// removing the labels, is left alone). "Already gone" is success.
func (r *deployPhase) prune(ctx context.Context, s *environmentScope, before, now []catalystv1.DeployedObject) (int, error) {
	key := func(o catalystv1.DeployedObject) string { return o.Group + "/" + o.Kind + "/" + o.Name }
	keep := map[string]bool{}
	for _, o := range now {
		keep[key(o)] = true
	}
	pruned := 0
	for _, o := range before {
		if keep[key(o)] {
			continue
		}
		gvk := schema.GroupVersionKind{Group: o.Group, Version: o.Version, Kind: o.Kind}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		err := s.tenant.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: o.Name}, live)
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			continue
		case err != nil:
			return pruned, fmt.Errorf("read %s %s to prune it: %w", o.Kind, o.Name, err)
		}
		if !oplabels.IsManaged(live.GetLabels()) || live.GetLabels()[DeployLabel] != s.env.Name {
			continue
		}
		err = s.tenant.Delete(ctx, live, client.Preconditions{UID: ptr.To(live.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return pruned, fmt.Errorf("prune %s %s: %w", o.Kind, o.Name, err)
		}
		pruned++
		s.Normalf(catalystv1.EventPruned, "Deleted %s %s: commit %s no longer holds it",
			o.Kind, o.Name, shortCommit(s.status.Deployment.Commit))
	}
	return pruned, nil
}
