package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContains(t *testing.T) {
	tests := []struct {
		name       string
		live, want any
		contains   bool
	}{
		{"equal scalars", "a", "a", true},
		{"different scalars", "a", "b", false},
		{"int64 against float64", int64(3), float64(3), true},
		{"different numbers", int64(3), int64(4), false},
		{"bool drift", true, false, false},
		{"extra live keys are defaults", map[string]any{"a": "1", "b": "2"}, map[string]any{"a": "1"}, true},
		{"missing wanted key", map[string]any{"b": "2"}, map[string]any{"a": "1"}, false},
		{"zero wanted value matches an absent key", map[string]any{}, map[string]any{"a": "", "n": int64(0), "f": false, "m": map[string]any{}, "l": []any{}}, true},
		{"nested drift", map[string]any{"spec": map[string]any{"replicas": int64(2)}}, map[string]any{"spec": map[string]any{"replicas": int64(1)}}, false},
		{"list elements compared in order", []any{map[string]any{"name": "a", "x": "1"}, map[string]any{"name": "b"}}, []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, true},
		{"list reordered", []any{"b", "a"}, []any{"a", "b"}, false},
		{"list shortened by someone", []any{"a"}, []any{"a", "b"}, false},
		{"list grown by someone", []any{"a", "b"}, []any{"a"}, false},
		{"empty list against absent", nil, []any{}, true},
		{"map against scalar", "x", map[string]any{"a": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Contains(tt.live, tt.want); got != tt.contains {
				t.Errorf("Contains(%v, %v) = %v, want %v", tt.live, tt.want, got, tt.contains)
			}
		})
	}
}

func TestToUnstructured(t *testing.T) {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Data:       map[string]string{"k": "v"},
	}
	u, err := ToUnstructured(cm)
	if err != nil {
		t.Fatal(err)
	}
	md := u.Object["metadata"].(map[string]any)
	for _, k := range []string{"creationTimestamp", "resourceVersion"} {
		if _, ok := md[k]; ok {
			t.Errorf("metadata.%s is sent", k)
		}
	}
	digest := u.GetAnnotations()[DigestAnnotation]
	if len(digest) != 16 {
		t.Fatalf("digest annotation %q, want 16 hex chars", digest)
	}

	cm.Labels = nil
	u2, err := ToUnstructured(cm)
	if err != nil {
		t.Fatal(err)
	}
	if u2.GetAnnotations()[DigestAnnotation] == digest {
		t.Error("dropping a label did not change the digest, so the apply removing it would be skipped")
	}
	cm.ResourceVersion = "8"
	cm.Labels = map[string]string{"a": "b"}
	u3, _ := ToUnstructured(cm)
	if u3.GetAnnotations()[DigestAnnotation] != digest {
		t.Error("the digest depends on server-set metadata")
	}
}
