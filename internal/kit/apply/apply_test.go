package apply

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

func TestSetLive(t *testing.T) {
	live := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: "7", UID: "u"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []corev1.ServicePort{{Port: 6667}}},
	}
	liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		t.Fatal(err)
	}
	// desired sets a field the live object lacks: it must not survive, desired becomes the live object.
	desired := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{"only": "desired"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 6667}}, Selector: map[string]string{"a": "b"}},
	}
	if err := setLive(desired, liveMap); err != nil {
		t.Fatal(err)
	}
	if desired.ResourceVersion != "7" || desired.Spec.ClusterIP != "10.0.0.1" {
		t.Errorf("live fields missing: resourceVersion %q, clusterIP %q", desired.ResourceVersion, desired.Spec.ClusterIP)
	}
	if desired.Labels != nil || desired.Spec.Selector != nil {
		t.Errorf("desired-only fields survived: labels %v, selector %v", desired.Labels, desired.Spec.Selector)
	}
	if desired.Kind != "Service" || desired.APIVersion != "v1" {
		t.Errorf("TypeMeta lost: %v", desired.TypeMeta)
	}
}

func TestConflict(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "irc.josie.cloud", Version: "v1alpha1", Kind: "ErgoNetwork"}
	owner := func(uid types.UID) metav1.OwnerReference {
		return *metav1.NewControllerRef(&metav1.ObjectMeta{Name: "net", UID: uid}, gvk)
	}
	network := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "net", UID: "u1"}}
	network.SetGroupVersionKind(gvk)
	obj := func(labels map[string]string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "net-config", Labels: labels, OwnerReferences: refs}}
	}
	ours := map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName}
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "app", UID: "d1", Controller: ptr.To(true)}
	desired := obj(ours, owner("u1"))
	tests := []struct {
		name string
		live *corev1.ConfigMap
		why  string // "" when the object is ours
	}{
		{"ours", obj(ours, owner("u1")), ""},
		{"ours with its labels removed: restored like any drift", obj(nil, owner("u1")), ""},
		{"ours, and desired without an owner reference (a claim to retain)", obj(ours, owner("u1")), ""},
		{"labelled, no controller: kept from an owner that went", obj(ours), ""},
		{"a user's object of the same name", obj(map[string]string{"team": "a"}), "was not made by the operator"},
		{"a user's object carrying a non-controller reference", obj(nil, metav1.OwnerReference{Kind: "ErgoNetwork", Name: "net", UID: "u1"}), "was not made by the operator"},
		{"controlled by something else", obj(ours, other), "is controlled by Deployment app"},
		{"an earlier network of the same name", obj(ours, owner("u0")), "belongs to an earlier ErgoNetwork net (uid u0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Conflict(tt.live, desired, network)
			switch {
			case tt.why == "" && c != nil:
				t.Errorf("conflict %v, want none", c)
			case tt.why != "" && (c == nil || !strings.Contains(c.Error(), tt.why)):
				t.Errorf("conflict %v, want one saying %q", c, tt.why)
			case c != nil && (c.Kind != "ConfigMap" || c.Name != "net-config"):
				t.Errorf("conflict names %s %s", c.Kind, c.Name)
			}
		})
	}
}

func TestUnderLegacyKey(t *testing.T) {
	want := &unstructured.Unstructured{Object: map[string]any{}}
	want.SetAnnotations(map[string]string{DigestAnnotation: "d1", "other": "x"})
	tests := []struct {
		name string
		live map[string]string
		want map[string]string
	}{
		{name: "digest under the legacy key", live: map[string]string{LegacyDigestAnnotation: "d1"},
			want: map[string]string{LegacyDigestAnnotation: "d1", "other": "x"}},
		{name: "another digest under the legacy key", live: map[string]string{LegacyDigestAnnotation: "d0"},
			want: map[string]string{DigestAnnotation: "d1", "other": "x"}},
		{name: "both keys", live: map[string]string{LegacyDigestAnnotation: "d1", DigestAnnotation: "d0"},
			want: map[string]string{DigestAnnotation: "d1", "other": "x"}},
		{name: "no digest", live: nil, want: map[string]string{DigestAnnotation: "d1", "other": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: tt.live}}
			got := underLegacyKey(live, want).GetAnnotations()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("annotations %v, want %v", got, tt.want)
			}
			if want.GetAnnotations()[DigestAnnotation] != "d1" {
				t.Errorf("want itself was changed: %v", want.GetAnnotations())
			}
		})
	}
}

func TestSetSlimLive(t *testing.T) {
	desired := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", Labels: map[string]string{"app": "x"}},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}},
		}
	}
	live := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "u", ResourceVersion: "9",
				Labels:      map[string]string{oplabels.ManagedByLabel: oplabels.OperatorName},
				Annotations: map[string]string{CachedAnnotation: "abc", DigestAnnotation: "0123456789abcdef"}},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1, ObservedGeneration: 3},
		}
	}
	for _, tc := range []struct {
		name    string
		desired client.Object
	}{
		{"typed, live's own type: fields copied", desired()},
		{"unstructured: through the apply form", func() client.Object {
			u, err := ToUnstructured(desired())
			if err != nil {
				t.Fatal(err)
			}
			return u
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := ToUnstructured(tc.desired)
			if err != nil {
				t.Fatal(err)
			}
			if err := setSlimLive(tc.desired, want, live()); err != nil {
				t.Fatal(err)
			}
			var got appsv1.Deployment
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.desired)
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &got); err != nil {
				t.Fatal(err)
			}
			if got.UID != "u" || got.ResourceVersion != "9" || got.Status.ReadyReplicas != 1 || got.Status.ObservedGeneration != 3 {
				t.Errorf("live metadata and status not taken: %+v %+v", got.ObjectMeta, got.Status)
			}
			if _, ok := got.Annotations[CachedAnnotation]; ok || got.Annotations[DigestAnnotation] != "0123456789abcdef" {
				t.Errorf("annotations %v: want the digest and not the cache's own mark", got.Annotations)
			}
			if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 || len(got.Spec.Template.Spec.Containers) != 1 || got.Spec.Template.Spec.Containers[0].Image != "i" {
				t.Errorf("desired's spec lost: %+v", got.Spec)
			}
			if tc.desired.GetObjectKind().GroupVersionKind().Kind != "Deployment" {
				t.Errorf("kind lost: %v", tc.desired.GetObjectKind().GroupVersionKind())
			}
		})
	}
}
