package apply

import (
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"

	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fresh is s in storage of its own, as a decoder leaves each object's strings.
func fresh(s string) string { return strings.Clone(s) }

func sameStorage(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func child(kind string) *corev1.ConfigMap {
	yes := true
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: fresh(kind), Namespace: fresh("team-a"), UID: types.UID("uid-" + kind),
		Labels:      map[string]string{fresh(oplabels.ManagedByLabel): fresh(oplabels.OperatorName), fresh(oplabels.InstanceLabel): fresh("net")},
		Annotations: map[string]string{fresh("digest"): fresh("abc")},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: fresh("irc.josie.cloud/v1alpha1"), Kind: fresh("ErgoNetwork"),
			Name: fresh("net"), UID: types.UID(fresh("1234")), Controller: &yes, BlockOwnerDeletion: &yes}},
	}}
}

func TestCompactSharesWhatObjectsRepeat(t *testing.T) {
	a, b := child("a"), child("b")
	Compact(a)
	Compact(b)

	shared := []struct {
		what string
		x, y string
	}{
		{"namespace", a.Namespace, b.Namespace},
		{"owner API version", a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion},
		{"owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		{"owner name", a.OwnerReferences[0].Name, b.OwnerReferences[0].Name},
		{"owner UID", string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		{"label value", a.Labels[oplabels.InstanceLabel], b.Labels[oplabels.InstanceLabel]},
	}
	for _, s := range shared {
		if s.x != s.y || !sameStorage(s.x, s.y) {
			t.Errorf("%s: %q and %q are not one shared string", s.what, s.x, s.y)
		}
	}
	if a.OwnerReferences[0].Controller != b.OwnerReferences[0].Controller || !*a.OwnerReferences[0].Controller {
		t.Errorf("the owners' controller flags are not one shared true")
	}
	// Each object's own values keep their storage: interning them would only cost a table entry.
	if sameStorage(a.Annotations["digest"], b.Annotations["digest"]) {
		t.Errorf("annotation values were interned; they are each object's own")
	}
	// Values are unchanged.
	want := child("a")
	if a.Namespace != want.Namespace || a.Labels[oplabels.ManagedByLabel] != oplabels.OperatorName || a.Annotations["digest"] != "abc" ||
		a.OwnerReferences[0].Name != "net" || a.OwnerReferences[0].UID != "1234" || !*a.OwnerReferences[0].BlockOwnerDeletion {
		t.Errorf("Compact changed a value: %+v", a.ObjectMeta)
	}
}

func TestCompactUnstructured(t *testing.T) {
	// GetOwnerReferences of an unstructured object is a copy: Compact must set the result back.
	typed := child("u")
	var u unstructured.Unstructured
	u.SetNamespace(typed.Namespace)
	u.SetOwnerReferences(typed.OwnerReferences)
	u.SetLabels(typed.Labels)
	Compact(&u)
	if got := u.GetOwnerReferences(); len(got) != 1 || got[0].Name != "net" || got[0].UID != "1234" || !*got[0].Controller {
		t.Fatalf("owner references after Compact: %+v", got)
	}
	if u.GetLabels()[oplabels.InstanceLabel] != "net" || u.GetNamespace() != "team-a" {
		t.Fatalf("metadata after Compact: %v %q", u.GetLabels(), u.GetNamespace())
	}
}

type withConditions struct {
	corev1.ConfigMap
	Status struct {
		Conditions []metav1.Condition
	}
}

type withOtherConditions struct {
	corev1.ConfigMap
	Status struct {
		Conditions []string
	}
}

func TestStatusConditions(t *testing.T) {
	c := &withConditions{}
	c.Status.Conditions = []metav1.Condition{{Type: fresh("Ready"), Status: metav1.ConditionStatus(fresh("True")), Reason: fresh("Applied"), Message: fresh("m")}}
	d := &withConditions{}
	d.Status.Conditions = []metav1.Condition{{Type: fresh("Ready"), Status: metav1.ConditionStatus(fresh("True")), Reason: fresh("Applied"), Message: fresh("m")}}

	for _, tc := range []struct {
		name string
		obj  client.Object
		want int
	}{
		{"custom resource with conditions", c, 1},
		{"Deployment (its own condition type)", &appsv1.Deployment{}, 0},
		{"Conditions of another type", &withOtherConditions{}, 0},
		{"no status", &corev1.ConfigMap{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := 0
			if f := statusConditions(tc.obj); f.IsValid() {
				got = f.Len()
			}
			if got != tc.want {
				t.Fatalf("statusConditions has %d conditions, want %d", got, tc.want)
			}
		})
	}

	transform := CompactTransform()
	for _, obj := range []*withConditions{c, d} {
		obj.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
		if _, err := transform(obj); err != nil {
			t.Fatal(err)
		}
		if obj.ManagedFields != nil {
			t.Errorf("managed fields kept: %v", obj.ManagedFields)
		}
	}
	grown := &withConditions{}
	grown.Status.Conditions = make([]metav1.Condition, 2, 16)
	grown.Status.Conditions[1].Type = "Ready"
	if _, err := transform(grown); err != nil {
		t.Fatal(err)
	}
	if got := grown.Status.Conditions; len(got) != 2 || cap(got) > 4 || got[1].Type != "Ready" {
		t.Errorf("conditions after the transform: len %d cap %d %+v; want them in a slice of their length", len(got), cap(got), got)
	}
	x, y := c.Status.Conditions[0], d.Status.Conditions[0]
	if !sameStorage(x.Type, y.Type) || !sameStorage(x.Reason, y.Reason) || !sameStorage(string(x.Status), string(y.Status)) {
		t.Errorf("conditions' type, status and reason are not shared")
	}
	if sameStorage(x.Message, y.Message) {
		t.Errorf("messages were interned; they are each object's own")
	}
}

func TestInternTableIsBounded(t *testing.T) {
	first := intern(fresh("bounded-first"))
	for i := range internLimit + 1 {
		intern(fmt.Sprintf("bounded-%d", i))
	}
	interned.Lock()
	n := len(interned.m)
	interned.Unlock()
	if n > internLimit {
		t.Fatalf("intern table holds %d strings, more than %d", n, internLimit)
	}
	// The table started over: the string is interned again, with storage of its own, same value.
	if again := intern(fresh("bounded-first")); again != first || sameStorage(again, first) {
		t.Fatalf("after the table started over, intern gave %q (shared storage %v)", again, sameStorage(again, first))
	}
}

type withResources struct {
	corev1.ConfigMap
	Spec struct {
		Resources corev1.ResourceRequirements
	}
}

// ownResources is how an API type of the operator declares its resources: a struct of its own, by pointer.
type ownResources struct {
	corev1.ConfigMap
	Spec struct {
		Resources *struct {
			Requests map[corev1.ResourceName]resource.Quantity
			Limits   map[corev1.ResourceName]resource.Quantity
		}
	}
}

func TestCompactSpecResources(t *testing.T) {
	list := func(memory string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse(memory)}
	}
	core := func(memory string) *withResources {
		o := &withResources{}
		o.Spec.Resources = corev1.ResourceRequirements{Requests: list(memory), Limits: list(memory)}
		return o
	}
	own := func(memory string) *ownResources {
		o := &ownResources{}
		o.Spec.Resources = &struct {
			Requests map[corev1.ResourceName]resource.Quantity
			Limits   map[corev1.ResourceName]resource.Quantity
		}{Requests: list(memory), Limits: map[corev1.ResourceName]resource.Quantity{corev1.ResourceMemory: resource.MustParse(memory)}}
		return o
	}
	a, b, c := core("128Mi"), core("128Mi"), core("256Mi")
	d, e := own("128Mi"), own("128Mi")
	transform := CompactTransform()
	for _, o := range []client.Object{a, b, c, d, e, &ownResources{}} {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
	}
	same := func(x, y any) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(a.Spec.Resources.Requests, b.Spec.Resources.Requests) || !same(a.Spec.Resources.Limits, b.Spec.Resources.Limits) {
		t.Errorf("equal requests and limits are not one shared list")
	}
	if same(a.Spec.Resources.Requests, c.Spec.Resources.Requests) {
		t.Errorf("different requests share a list")
	}
	if !same(d.Spec.Resources.Requests, e.Spec.Resources.Requests) || !same(d.Spec.Resources.Limits, e.Spec.Resources.Limits) {
		t.Errorf("an API type's own resources are not shared")
	}
	if !same(a.Spec.Resources.Requests, d.Spec.Resources.Requests) {
		t.Errorf("equal requests of two types are not one shared list")
	}
	if got := c.Spec.Resources.Limits[corev1.ResourceMemory]; got.String() != "256Mi" {
		t.Errorf("limit after compacting = %s", got.String())
	}
	if got := e.Spec.Resources.Limits[corev1.ResourceMemory]; got.String() != "128Mi" || len(e.Spec.Resources.Limits) != 1 {
		t.Errorf("limits after compacting = %v", e.Spec.Resources.Limits)
	}
	if got := statusConditions(&withResources{}); got.IsValid() {
		t.Errorf("statusConditions of an object without conditions = %v", got)
	}
}
