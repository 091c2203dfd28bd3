package manager

import (
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cache holds thousands of objects that repeat the same few strings: every child of a network
// names the same namespace and the same owner (its API version, kind, name and UID), and every object
// of the operator carries the same label keys and values. Decoding gives each object its own copy of
// each. Compact makes the cached objects share one copy instead, from a table of at most internLimit
// strings that starts over when full (so the strings of deleted objects cannot pile up; an object
// compacted after that shares with those that come after it).
//
// Only what repeats across objects is shared. Names, UIDs of the objects themselves, resource versions
// and annotation values (digests) are each object's own, and sharing them would only add the intern
// table's entry to each.

var sharedTrue, sharedFalse = func() (*bool, *bool) { t, f := true, false; return &t, &f }()

// internLimit bounds the intern table: at about 80 bytes an entry, 2.5 MiB. A network's children add
// three entries (its name and UID as their owner, its instance label), so it holds 10,000 networks.
const internLimit = 1 << 15

var interned = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// intern returns the shared copy of s.
func intern(s string) string {
	if s == "" {
		return s
	}
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	if len(interned.m) >= internLimit {
		interned.m = make(map[string]string, internLimit/4)
	}
	s = strings.Clone(s) // never keep a larger buffer alive through s
	interned.m[s] = s
	return s
}

// sharedBool returns a pointer to a shared true or false with *b's value, or nil for nil. Cached objects
// are never written to (the cache deep-copies what it hands out), so they may point at the same bool.
func sharedBool(b *bool) *bool {
	switch {
	case b == nil:
		return nil
	case *b:
		return sharedTrue
	default:
		return sharedFalse
	}
}

// CompactTransform is the cache's transform for objects no group cuts down: managed fields stripped
// (what controller-runtime's default does), then Compact, and the status conditions of a custom resource
// (a Status.Conditions of metav1.Condition) compacted with CompactConditions.
func CompactTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return nil, err
		}
		if obj, ok := out.(client.Object); ok {
			Compact(obj)
			if conditions := statusConditions(obj); conditions != nil {
				CompactConditions(conditions)
			}
		}
		return out, nil
	}
}

var conditionsType = reflect.TypeFor[[]metav1.Condition]()

// statusConditions is obj's Status.Conditions when obj is a pointer to a struct with such a field of
// []metav1.Condition (every custom resource of the operator), or nil.
func statusConditions(obj client.Object) []metav1.Condition {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	status := v.Elem().FieldByName("Status")
	if status.Kind() != reflect.Struct {
		return nil
	}
	c := status.FieldByName("Conditions")
	if !c.IsValid() || c.Type() != conditionsType {
		return nil
	}
	return c.Interface().([]metav1.Condition)
}

// CompactIdentity is Compact without the labels and annotations, for a transform that rebuilds those
// itself (apply.Slim).
func CompactIdentity(obj client.Object) {
	obj.SetNamespace(intern(obj.GetNamespace()))
	if refs := obj.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			r := &refs[i]
			r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
			r.UID = types.UID(intern(string(r.UID)))
			r.Controller, r.BlockOwnerDeletion = sharedBool(r.Controller), sharedBool(r.BlockOwnerDeletion)
		}
		obj.SetOwnerReferences(refs) // a copy for unstructured objects; the same slice for typed ones
	}
}

// Compact makes obj, an object on its way into the cache, share its namespace, its owner references'
// API version, kind, name, UID and flags, and its labels' keys and values with the other cached
// objects, and its annotations' keys. Values are unchanged; only where they are stored moves.
func Compact(obj client.Object) {
	CompactIdentity(obj)
	if l := obj.GetLabels(); len(l) > 0 {
		obj.SetLabels(internMap(l, true))
	}
	if a := obj.GetAnnotations(); len(a) > 0 {
		obj.SetAnnotations(internMap(a, false))
	}
}

// internMap is m with its keys shared, and its values too when values is true, in a map of m's size.
func internMap(m map[string]string, values bool) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	return out
}

// CompactConditions makes conditions share their type, status and reason (a few values that every
// object repeats); messages, which name the object, stay its own.
func CompactConditions(conditions []metav1.Condition) {
	for i := range conditions {
		c := &conditions[i]
		c.Type, c.Reason = intern(c.Type), intern(c.Reason)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
}
