package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/manager"
)

// DigestAnnotation holds a digest of the fields the operator applied to an object.
const DigestAnnotation = manager.AnnotationDomain + "/applied-digest"

// LegacyDigestAnnotation is where versions before the one annotation domain kept the digest (the same
// digest of the same fields). An object whose digest is still there, and that holds everything desired, is
// unchanged: rewriting it only to move the key would cost a write per child at upgrade and, for a
// Deployment, bump its generation (annotations count there), so the network would read as not available
// until the Deployment controller caught up. The next real change sends DigestAnnotation, and server-side
// apply removes the old key, which the same field owner applied.
const LegacyDigestAnnotation = "platform-operator.io/applied-digest"

// Result says what Apply did to the cluster.
type Result string

const (
	// Unchanged means the live object already matched: no request was sent.
	Unchanged Result = "Unchanged"
	// Created means the object did not exist and was created.
	Created Result = "Created"
	// Updated means the live object differed and was patched.
	Updated Result = "Updated"
)

// Applier applies desired objects with server-side apply under one field owner.
type Applier struct {
	// Client reads the live object (normally from the manager's cache) and sends the apply request.
	Client client.Client
	// Reader reads straight from the API server when Client's cache does not have the object: the cache
	// holds only what the operator labelled, so an object of the same name that someone else made is
	// invisible to it. Nil trusts the cache (tests of the apply path alone).
	Reader client.Reader
	// FieldOwner is the field manager name every apply request uses.
	FieldOwner string
}

// ConflictError is what Apply returns instead of taking over an object of the desired name that the
// operator did not make, or that another owner (or an earlier object of the owner's name) controls.
type ConflictError struct {
	Kind, Name string
	// Why says whose the object is.
	Why string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s already exists and %s; it is left untouched", e.Kind, e.Name, e.Why)
}

// Conflict says why live, an existing object of desired's kind and name, is not owner's to apply
// over, or returns nil when it is: owner controls it (labels are then restored like any drift), or it
// carries the operator's managed-by label and has no controller (the operator's own, kept when its owner
// went: a retained claim).
func Conflict(live, desired, owner client.Object) *ConflictError {
	kind := desired.GetObjectKind().GroupVersionKind().Kind
	have := metav1.GetControllerOf(live)
	switch {
	case have != nil && have.UID == owner.GetUID():
		return nil
	case have != nil && have.Name == owner.GetName() && have.Kind == owner.GetObjectKind().GroupVersionKind().Kind:
		return &ConflictError{Kind: kind, Name: live.GetName(),
			Why: fmt.Sprintf("belongs to an earlier %s %s (uid %s) that Kubernetes is still deleting", have.Kind, have.Name, have.UID)}
	case have != nil:
		return &ConflictError{Kind: kind, Name: live.GetName(), Why: fmt.Sprintf("is controlled by %s %s", have.Kind, have.Name)}
	case !manager.IsManaged(live.GetLabels()):
		return &ConflictError{Kind: kind, Name: live.GetName(),
			Why: fmt.Sprintf("was not made by the operator (it lacks the label %s=%s)", manager.ManagedByLabel, manager.OperatorName)}
	default:
		return nil
	}
}

// Apply makes the cluster hold desired's fields, for owner: an existing object of desired's name that is
// not owner's (see Conflict) is left untouched and reported as a *ConflictError. desired is a typed object with TypeMeta set; only the
// fields it sets are sent, so fields other managers own (or the server defaults) are left alone. When the
// live object already holds every desired field with the same value, nothing is sent: an unchanged
// owner costs no write.
//
// On success desired holds the live object, as client writes leave it: the API server's answer when a
// request was sent, the cached object when none was. Callers read the child's status from it rather than
// from a cache that may not have seen their own write yet.
func (a *Applier) Apply(ctx context.Context, owner, desired client.Object) (Result, error) {
	want, err := ToUnstructured(desired)
	if err != nil {
		return "", err
	}
	gvk := want.GroupVersionKind()
	if gvk.Kind == "" {
		return "", fmt.Errorf("apply %T %s: TypeMeta is not set", desired, client.ObjectKeyFromObject(desired))
	}

	// Read into the typed kind so the cached client serves it from the informer it already has.
	live, err := a.Client.Scheme().New(gvk)
	if err != nil {
		return "", fmt.Errorf("apply %s: %w", gvk.Kind, err)
	}
	liveObj, ok := live.(client.Object)
	if !ok {
		return "", fmt.Errorf("apply %s: %T is not a client.Object", gvk.Kind, live)
	}
	result := Updated
	key := client.ObjectKeyFromObject(desired)
	switch err := a.Client.Get(ctx, key, liveObj); {
	case apierrors.IsNotFound(err):
		result = Created
		if a.Reader == nil {
			break
		}
		// Only on creation: one read to be sure the name is free, so that nobody's object is taken over.
		switch err := a.Reader.Get(ctx, key, liveObj); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
		default:
			if c := Conflict(liveObj, desired, owner); c != nil {
				return "", c
			}
			result = Updated // ours; the cache has not seen it yet
		}
	case err != nil:
		return "", fmt.Errorf("read %s %s: %w", gvk.Kind, key, err)
	default:
		if c := Conflict(liveObj, desired, owner); c != nil {
			return "", c
		}
		liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(liveObj)
		if err != nil {
			return "", err
		}
		if Contains(liveMap, want.Object) || Contains(liveMap, underLegacyKey(liveObj, want).Object) {
			return Unchanged, setLive(desired, liveMap)
		}
	}

	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want),
		client.FieldOwner(a.FieldOwner), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("apply %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(desired), err)
	}
	// The apply request decoded the server's answer into want.
	return result, setLive(desired, want.Object)
}

// underLegacyKey is want with its digest moved to LegacyDigestAnnotation when live carries that digest
// there and none under DigestAnnotation; otherwise want itself.
func underLegacyKey(live client.Object, want *unstructured.Unstructured) *unstructured.Unstructured {
	have := live.GetAnnotations()
	digest := want.GetAnnotations()[DigestAnnotation]
	if _, current := have[DigestAnnotation]; current || have[LegacyDigestAnnotation] != digest {
		return want
	}
	legacy := want.DeepCopy()
	annotations := legacy.GetAnnotations()
	delete(annotations, DigestAnnotation)
	annotations[LegacyDigestAnnotation] = digest
	legacy.SetAnnotations(annotations)
	return legacy
}

// setLive overwrites obj with the object live holds.
func setLive(obj client.Object, live map[string]any) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live, obj); err != nil {
		return fmt.Errorf("read back %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// ToUnstructured turns a typed object into the map an apply request sends: no status, no server-set
// metadata, no nulls.
func ToUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"} {
			delete(md, k)
		}
	}
	pruneNulls(m)
	u := &unstructured.Unstructured{Object: m}
	// Contains cannot see a field we stopped setting, so the digest of everything we set rides along:
	// dropping a label or a list entry changes it and forces the apply that removes the field.
	sum, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("digest %T: %w", obj, err)
	}
	digest := sha256.Sum256(sum)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[DigestAnnotation] = hex.EncodeToString(digest[:8])
	u.SetAnnotations(annotations)
	return u, nil
}

func pruneNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			pruneNulls(e)
		}
	case []any:
		for _, e := range t {
			pruneNulls(e)
		}
	}
}
