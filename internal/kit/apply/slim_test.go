package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

var slimConfigMap = Slim(oplabels.FieldOwner, func(c *corev1.ConfigMap) any { return c.Data },
	func(c *corev1.ConfigMap) { c.Data = nil })

func configMap(data string, managers ...string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u", ResourceVersion: "5",
			Labels:      map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName},
			Annotations: map[string]string{DigestAnnotation: "00000000000000aa", lastAppliedAnnotation: "{...}"}},
		Data: map[string]string{"ircd.yaml": data},
	}
	for _, m := range managers {
		c.ManagedFields = append(c.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate})
	}
	return c
}

func slim(t *testing.T, c *corev1.ConfigMap) (*corev1.ConfigMap, uint64, bool) {
	t.Helper()
	out, err := slimConfigMap(c)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	content, isShared, ok := slimMark(got)
	if !ok {
		t.Fatalf("no %s on the slim copy: %v", CachedAnnotation, got.Annotations)
	}
	return got, content, isShared
}

func TestSlim(t *testing.T) {
	got, content, isShared := slim(t, configMap("a", oplabels.FieldOwner, "kube-controller-manager"))
	if got.Data != nil || got.ManagedFields != nil || got.Annotations[lastAppliedAnnotation] != "" {
		t.Errorf("slim copy keeps data %v, managed fields %v or annotations %v", got.Data, got.ManagedFields, got.Annotations)
	}
	if got.Annotations[DigestAnnotation] == "" || got.Labels[oplabels.ManagedByLabel] == "" || got.UID != "u" {
		t.Errorf("slim copy lost its metadata: %+v", got.ObjectMeta)
	}
	if isShared {
		t.Error("written only by the operator and a trusted manager, yet shared")
	}
	if again, _, _ := slim(t, got); again.Annotations[CachedAnnotation] != got.Annotations[CachedAnnotation] {
		t.Error("a second transform of a slim copy changed it")
	}

	status := configMap("a")
	status.ResourceVersion, status.Generation = "9", 3
	if _, c, _ := slim(t, status); c != content {
		t.Error("the content digest moved with resourceVersion or generation")
	}
	if _, c, _ := slim(t, configMap("b")); c == content {
		t.Error("the content digest did not see the data change")
	}
	relabelled := configMap("a")
	relabelled.Labels["x"] = "y"
	if _, c, _ := slim(t, relabelled); c == content {
		t.Error("the content digest did not see a new label")
	}
	if _, _, isShared := slim(t, configMap("a", oplabels.FieldOwner, "kubectl-edit")); !isShared {
		t.Error("a write by kubectl-edit did not mark the object shared")
	}
	other := &corev1.Secret{}
	if out, _ := slimConfigMap(other); out != other {
		t.Error("an object of another type was changed")
	}
}

func TestKnown(t *testing.T) {
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "o"}}
	const digest = 0xaa
	live := func(rv, cachedContent string, extra ...string) *corev1.ConfigMap {
		annotations := map[string]string{DigestAnnotation: "00000000000000aa", CachedAnnotation: cachedContent}
		for i := 0; i+1 < len(extra); i += 2 {
			annotations[extra[i]] = extra[i+1]
		}
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u", ResourceVersion: rv,
			Annotations: annotations}}
	}
	check := func(a *Applier, obj *corev1.ConfigMap, want bool, why string) {
		t.Helper()
		content, isShared, _ := slimMark(obj)
		if got := a.known(owner, obj, 1, digest, content, isShared); got != want {
			t.Errorf("%s: known = %v, want %v", why, got, want)
		}
	}

	a := &Applier{}
	check(a, live("10", "c1,shared"), false, "after a restart, a child another writer touched")
	check(a, live("10", "c1", DigestAnnotation, "00000000000000bb"), false, "after a restart, a child without desired's digest")
	check(a, live("10", "c1"), true, "after a restart, the operator's own child with desired's digest")
	check(a, live("11", "c1"), true, "a status write: resourceVersion moved, content did not")
	check(a, live("12", "c2"), false, "another writer changed the content")

	a = &Applier{}
	a.records.put(owner, childRecord{key: 1, uid: hash("u"), digest: digest, rv: 20})
	check(a, live("19", "c1"), true, "the cache has not yet seen the operator's write")
	check(a, live("20", "c3"), true, "the cache at the operator's write")
	check(a, live("21", "c3"), true, "a status write after it")
	check(a, live("22", "c4"), false, "someone's write after it")
	a.Forget(types.NamespacedName{Namespace: "ns", Name: "owner"})
	if _, ok := a.records.get(owner, 1); ok {
		t.Error("Forget kept the record")
	}
}

func TestSlimKeeping(t *testing.T) {
	keep := SlimKeeping(oplabels.FieldOwner, []string{"example.com/source"}, func(c *corev1.ConfigMap) any { return c.Data },
		func(c *corev1.ConfigMap) { c.Data = nil })
	in := configMap("a")
	in.Annotations["example.com/source"] = "s1"
	in.Annotations["example.com/other"] = "o"
	out, err := keep(in)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap).Annotations
	if got["example.com/source"] != "s1" || got[DigestAnnotation] == "" || got[CachedAnnotation] == "" {
		t.Errorf("kept annotations %v, want the source, the applied digest and the cache's mark", got)
	}
	if _, ok := got["example.com/other"]; ok {
		t.Errorf("an annotation not asked for was kept: %v", got)
	}
}

// A metadata-only watch of a slim kind (the BackupStore controller's of every ConfigMap) gets its objects
// through the same transform: it keeps their identity, owner references and the managed-by label, and
// none of the managed fields and annotations it held whole before.
func TestSlimMetadataCopy(t *testing.T) {
	controller := true
	meta := func(labels map[string]string) *metav1.PartialObjectMetadata {
		c := configMap("a", oplabels.FieldOwner, "kubectl-edit")
		c.Labels = labels
		c.Annotations["example.com/source"] = "s1"
		c.Generation = 4
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "irc.josie.cloud/v1alpha1", Kind: "ErgoNetwork", Name: "n", UID: "o", Controller: &controller}}
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: c.ObjectMeta}
	}
	keep := SlimKeeping(oplabels.FieldOwner, []string{"example.com/source"}, func(c *corev1.ConfigMap) any { return c.Data },
		func(c *corev1.ConfigMap) { c.Data = nil })
	for _, transform := range []struct {
		name string
		fn   func(any) (any, error)
	}{{"Slim", slimConfigMap}, {"SlimKeeping", keep}} {
		in := meta(map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName, "app.kubernetes.io/instance": "n"})
		out, err := transform.fn(in)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := out.(*metav1.PartialObjectMetadata)
		if !ok {
			t.Fatalf("%s: a metadata copy came out as %T", transform.name, out)
		}
		if got.ManagedFields != nil || got.Annotations != nil {
			t.Errorf("%s: the metadata copy keeps managed fields %v or annotations %v", transform.name, got.ManagedFields, got.Annotations)
		}
		if len(got.Labels) != 1 || !oplabels.IsManaged(got.Labels) {
			t.Errorf("%s: labels %v, want only the managed-by label", transform.name, got.Labels)
		}
		if got.Name != "c" || got.Namespace != "ns" || got.UID != "u" || got.ResourceVersion != "5" || got.Generation != 4 ||
			got.Kind != "ConfigMap" || metav1.GetControllerOf(got) == nil || metav1.GetControllerOf(got).UID != "o" {
			t.Errorf("%s: the metadata copy lost its identity: %+v", transform.name, got)
		}
		if _, _, slim := slimMark(got); slim {
			t.Errorf("%s: a metadata copy carries the content mark, with no content to digest", transform.name)
		}
	}
	// Control: an object of the typed kind still gets the typed slim copy, mark and kept annotations.
	if typed, _ := keep(configMap("a")); typed.(*corev1.ConfigMap).Annotations[CachedAnnotation] == "" {
		t.Error("the typed copy lost its content mark")
	}
	unlabelled, _ := slimConfigMap(meta(map[string]string{"x": "y"}))
	if l := unlabelled.(*metav1.PartialObjectMetadata).Labels; l != nil {
		t.Errorf("an object without the managed-by label kept labels %v", l)
	}
}
