package testutil

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestWriteCounterKeys(t *testing.T) {
	ns := &unstructured.Unstructured{}
	ns.SetKind("Namespace")
	ns.SetName("env-b")
	var w WriteCounter
	for _, o := range []any{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "one"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "two"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "env-a"}},
		ns,
	} {
		w.add(o)
	}
	tests := []struct {
		name       string
		namespaces []string
		want       int
	}{
		{name: "objects in a namespace", namespaces: []string{"a"}, want: 2},
		{name: "a typed Namespace counts under its own name", namespaces: []string{"env-a"}, want: 1},
		{name: "an unstructured Namespace too", namespaces: []string{"env-b"}, want: 1},
		{name: "several namespaces add up", namespaces: []string{"a", "env-a", "env-b"}, want: 4},
		{name: "nothing elsewhere", namespaces: []string{"b"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.In(tt.namespaces...); got != tt.want {
				t.Errorf("In(%v) = %d, want %d", tt.namespaces, got, tt.want)
			}
		})
	}
	if got, want := w.Since("a", 1), []string{"*v1.ConfigMap two"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Since(a, 1) = %q, want %q", got, want)
	}
	if got := w.Since("a", 5); len(got) != 0 {
		t.Errorf("Since past the end = %q, want none", got)
	}
}
