package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
