package restoresource

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

// TestPendingIn: a Backup wakes only the objects of its namespace that wait for a restore. ConfigMaps stand
// in for a restoring kind (the kit imports no API group of a source kind); "pending" is an annotation.
func TestPendingIn(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	cm := func(ns, name string, pending bool) *corev1.ConfigMap {
		o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if pending {
			o.Annotations = map[string]string{"pending": "true"}
		}
		return o
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		cm("team-a", "waits", true), cm("team-a", "restored", false), cm("team-b", "waits-elsewhere", true)).Build()
	k := Kind{Source: backupv1.SourcePostgresDatabase,
		NewList: func() client.ObjectList { return &corev1.ConfigMapList{} },
		Pending: func(o client.Object) bool { return o.GetAnnotations()["pending"] == "true" }}

	reqs := PendingIn(c, k)(context.Background(), &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "b1"}})

	if len(reqs) != 1 || reqs[0].Namespace != "team-a" || reqs[0].Name != "waits" {
		t.Fatalf("requests %v, want only team-a/waits", reqs)
	}
}
