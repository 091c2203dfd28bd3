package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// StatusWriter writes one writer's part of a custom resource's status with server-side apply under a
// field owner of its own: the top-level status fields and the condition types it declares. A second
// writer on the same object (an aggregator, another controller) owns its own fields and conditions, and
// neither removes what the other wrote. A writer removes a field or condition it owns by leaving it out.
//
// It writes only when what it owns differs from what the object shows, and not again when the object
// came from a cache that has not yet seen this writer's last write of the same status: children's events
// wake the next reconcile within milliseconds of a write, often before the owner's own watch event
// reaches the cache.
type StatusWriter struct {
	// Client sends the apply requests (and the one-off managed-fields upgrade).
	Client client.Client
	// FieldOwner is this writer's field manager, e.g. "platform-operator/ergonetwork".
	FieldOwner string
	// Fields are the top-level status fields this writer owns, by JSON name (besides conditions).
	Fields []string
	// Conditions are the condition types this writer owns.
	Conditions []string
	// LegacyManagers are field managers that wrote the same status before with update or patch requests
	// (earlier versions of the operator). The first apply on such an object moves their fields to
	// FieldOwner (k8s.io/client-go/util/csaupgrade), so leaving a field out removes it as it should.
	LegacyManagers []string

	mu   sync.Mutex
	last map[types.NamespacedName]statusWrite
}

// statusWrite is one status write: the owned status it replaced and the one it wrote, as digests.
type statusWrite struct {
	uid           types.UID
	before, after uint64
}

// Write applies desired, the owner's status as this writer computed it, when the part this writer owns
// differs from live's. live is the owner as read (from the cache); it is not changed.
func (w *StatusWriter) Write(ctx context.Context, live client.Object, desired any) error {
	liveStatus, err := statusOf(live)
	if err != nil {
		return err
	}
	want, err := toMap(desired)
	if err != nil {
		return err
	}
	have, owned := w.project(liveStatus), w.project(want)
	haveSorted, ownedSorted := sorted(have), sorted(owned)
	if equality.Semantic.DeepEqual(haveSorted, ownedSorted) {
		return nil
	}
	key := client.ObjectKeyFromObject(live)
	write := statusWrite{uid: live.GetUID(), before: digest(haveSorted), after: digest(ownedSorted)}
	if w.lagging(key, write) {
		return nil
	}

	gvk, err := apiutil.GVKForObject(live, w.Client.Scheme())
	if err != nil {
		return err
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"status": owned}}
	patch.SetGroupVersionKind(gvk)
	patch.SetName(live.GetName())
	patch.SetNamespace(live.GetNamespace())
	patch.SetUID(live.GetUID()) // never write onto a new object of the same name
	if err := w.apply(ctx, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	w.remember(key, write)
	return nil
}

// lagging says whether write repeats the object's last status write: the cache still shows the status
// that write replaced, and the desired status is the one it wrote.
func (w *StatusWriter) lagging(key types.NamespacedName, write statusWrite) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.last[key]
	return ok && last == write
}

func (w *StatusWriter) remember(key types.NamespacedName, write statusWrite) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[types.NamespacedName]statusWrite{}
	}
	w.last[key] = write
}

// apply sends one status apply; when the answer shows a legacy manager still owning status fields, it
// moves them to FieldOwner and applies again, so that fields this write left out are removed.
func (w *StatusWriter) apply(ctx context.Context, patch *unstructured.Unstructured) error {
	send := func() (*unstructured.Unstructured, error) {
		obj := patch.DeepCopy()
		err := w.Client.Status().Patch(ctx, obj, client.Apply, client.FieldOwner(w.FieldOwner), client.ForceOwnership)
		if err != nil {
			return nil, fmt.Errorf("write status: %w", err)
		}
		return obj, nil
	}
	got, err := send()
	if err != nil || len(w.LegacyManagers) == 0 {
		return err
	}
	upgrade, err := csaupgrade.UpgradeManagedFieldsPatch(got, sets.New(w.LegacyManagers...), w.FieldOwner, csaupgrade.Subresource("status"))
	if err != nil {
		return fmt.Errorf("upgrade status field managers: %w", err)
	}
	if upgrade == nil {
		return nil
	}
	if err := w.Client.Patch(ctx, got, client.RawPatch(types.JSONPatchType, upgrade)); err != nil {
		return fmt.Errorf("upgrade status field managers: %w", err)
	}
	_, err = send()
	return err
}

// Forget drops what the writer remembers of an object that is gone.
func (w *StatusWriter) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// project is the part of a status map this writer owns: its fields, and its conditions in their order.
func (w *StatusWriter) project(status map[string]any) map[string]any {
	out := map[string]any{}
	for _, f := range w.Fields {
		if v, ok := status[f]; ok {
			out[f] = v
		}
	}
	list, _ := status["conditions"].([]any)
	var conds []any
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if t, _ := m["type"].(string); slices.Contains(w.Conditions, t) {
			conds = append(conds, m)
		}
	}
	if len(conds) > 0 {
		out["conditions"] = conds
	}
	return out
}

// sorted is an owned status with its conditions sorted by type, for comparing: the API server keeps
// conditions in the order the writers sent them, and another writer's may sit in between.
func sorted(owned map[string]any) map[string]any {
	conds, ok := owned["conditions"].([]any)
	if !ok {
		return owned
	}
	out := maps.Clone(owned)
	conds = slices.Clone(conds)
	slices.SortFunc(conds, func(a, b any) int {
		ta, _ := a.(map[string]any)["type"].(string)
		tb, _ := b.(map[string]any)["type"].(string)
		return strings.Compare(ta, tb)
	})
	out["conditions"] = conds
	return out
}

// digest identifies an owned status, ignoring the conditions' lastTransitionTime: a reconcile working
// from a stale status recomputes the same transitions a second later.
func digest(owned map[string]any) uint64 {
	c := runtime.DeepCopyJSONValue(owned).(map[string]any)
	if conds, ok := c["conditions"].([]any); ok {
		for _, cond := range conds {
			if m, ok := cond.(map[string]any); ok {
				delete(m, "lastTransitionTime")
			}
		}
	}
	data, _ := json.Marshal(c) // a JSON value always marshals
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}

// statusOf is obj's status as a JSON map (empty when it has none).
func statusOf(obj client.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	s, _ := m["status"].(map[string]any)
	if s == nil {
		s = map[string]any{}
	}
	return s, nil
}

// toMap is a typed status as a JSON map.
func toMap(status any) (map[string]any, error) {
	if m, ok := status.(map[string]any); ok {
		return m, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(status)
}
