package apply

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
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
// (a Status.Conditions of metav1.Condition) compacted with compactConditions.
func CompactTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return nil, err
		}
		if obj, ok := out.(client.Object); ok {
			Compact(obj)
			compactStatusConditions(obj)
			compactSpecResources(obj)
		}
		return out, nil
	}
}

var (
	conditionsType   = reflect.TypeFor[[]metav1.Condition]()
	resourceListType = reflect.TypeFor[corev1.ResourceList]()
)

// structField is v's field name, through a non-nil pointer to v; an invalid Value when v (or what it
// points at) is not a struct.
func structField(v reflect.Value, name string) reflect.Value {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return v.FieldByName(name)
}

// statusConditions is obj's Status.Conditions when it is a []metav1.Condition (every custom resource of
// the operator has one), or an invalid Value.
func statusConditions(obj client.Object) reflect.Value {
	f := structField(structField(reflect.ValueOf(obj), "Status"), "Conditions")
	if !f.IsValid() || f.Type() != conditionsType {
		return reflect.Value{}
	}
	return f
}

// compactStatusConditions compacts obj's status conditions (compactConditions) and stores them in a slice
// of their length: the JSON decoder grows a slice by doubling, so nine conditions (a network has nine)
// arrive in room for sixteen.
func compactStatusConditions(obj client.Object) {
	f := statusConditions(obj)
	if !f.IsValid() || f.Len() == 0 {
		return
	}
	conditions := f.Interface().([]metav1.Condition)
	if cap(conditions) > len(conditions) && f.CanSet() {
		conditions = slices.Clone(conditions)
		f.Set(reflect.ValueOf(conditions))
	}
	compactConditions(conditions)
}

// compactSpecResources shares obj's Spec.Resources requests and limits (sharedResourceList) when Spec
// has a Resources struct, or pointer to one, with Requests and Limits maps of quantities
// (corev1.ResourceRequirements, or the copy of it an API type declares).
func compactSpecResources(obj client.Object) {
	resources := structField(structField(reflect.ValueOf(obj), "Spec"), "Resources")
	for _, name := range []string{"Requests", "Limits"} {
		f := structField(resources, name)
		if !f.IsValid() || !f.CanSet() || !f.Type().ConvertibleTo(resourceListType) || f.Kind() != reflect.Map || f.IsNil() {
			continue
		}
		shared := sharedResourceList(f.Convert(resourceListType).Interface().(corev1.ResourceList))
		f.Set(reflect.ValueOf(shared).Convert(f.Type()))
	}
}

// resourceLists holds one shared ResourceList per content (at most internLimit/64, starting over when
// full): most objects ask for the same requests and limits, and a map of quantities is half a kilobyte.
var resourceLists = struct {
	sync.Mutex
	m map[string]corev1.ResourceList
}{m: map[string]corev1.ResourceList{}}

func sharedResourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var key strings.Builder
	for _, name := range names {
		q := l[corev1.ResourceName(name)]
		key.WriteString(name)
		key.WriteByte('=')
		key.WriteString(q.String())
		key.WriteByte(',')
	}
	resourceLists.Lock()
	defer resourceLists.Unlock()
	if shared, ok := resourceLists.m[key.String()]; ok {
		return shared
	}
	if len(resourceLists.m) >= internLimit/64 {
		resourceLists.m = map[string]corev1.ResourceList{}
	}
	resourceLists.m[key.String()] = l
	return l
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

// compactConditions makes conditions share their type, status and reason (a few values that every
// object repeats); messages, which name the object, stay its own.
func compactConditions(conditions []metav1.Condition) {
	for i := range conditions {
		c := &conditions[i]
		c.Type, c.Reason = intern(c.Type), intern(c.Reason)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
}
