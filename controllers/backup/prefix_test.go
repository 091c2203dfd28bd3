package backup

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

func TestPrefixConflict(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	store := func(ns, name, endpoint, bucket, prefix string, created metav1.Time) backupv1.BackupStore {
		return backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created},
			Spec: backupv1.BackupStoreSpec{Endpoint: endpoint, Bucket: bucket, Prefix: prefix}}
	}
	tests := []struct {
		name   string
		store  backupv1.BackupStore
		others []backupv1.BackupStore
		want   bool
	}{
		{"alone", store("b", "s", "http://s3", "bk", "", t1), nil, false},
		{"distinct roots", store("b", "s", "http://s3", "bk", "prod", t1),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "prod", t0)}, false},
		{"inside an older namespace's root", store("b", "s", "http://s3", "bk", "prod/a", t1),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "prod", t0)}, true},
		{"containing an older namespace's root", store("prod", "s", "http://s3", "bk", "", t1),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "prod", t0)}, true},
		{"the older store keeps its root", store("a", "s", "http://s3", "bk", "prod", t0),
			[]backupv1.BackupStore{store("b", "s", "http://s3", "bk", "prod/a", t1)}, false},
		{"same age: namespace order", store("b", "s", "http://s3", "bk", "prod/a", t0),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "prod", t0)}, true},
		{"same namespace never conflicts", store("a", "s2", "http://s3", "bk", "prod", t1),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "prod", t0)}, false},
		{"another bucket", store("b", "s", "http://s3", "bk2", "prod/a", t1),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "prod", t0)}, false},
		{"another endpoint", store("b", "s", "http://s4", "bk", "prod/a", t1),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "prod", t0)}, false},
		{"same endpoint spelled differently", store("b", "s", "S3.example/", "bk", "prod/a", t1),
			[]backupv1.BackupStore{store("a", "s", "https://s3.example", "bk", "prod", t0)}, true},
		{"a name that only shares a prefix of characters", store("ab", "s", "http://s3", "bk", "", t1),
			[]backupv1.BackupStore{store("a", "s", "http://s3", "bk", "", t0)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := prefixConflict(&tt.store, tt.others); got != tt.want {
				t.Errorf("prefixConflict = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestConfigMapIdentity: a user's ConfigMap is cached without its data; the selector leaves the
// operator's own ConfigMaps to the other groups' rules.
func TestConfigMapIdentity(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "a", UID: "u", ResourceVersion: "7",
		Annotations: map[string]string{"big": "x"}}, Data: map[string]string{"ca.crt": "PEM"}}
	out, err := configMapIdentity(cm)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ConfigMap)
	if got.Data != nil || got.Annotations != nil || got.Name != "ca" || got.ResourceVersion != "7" || got.UID != "u" {
		t.Errorf("identity %+v", got)
	}
	if cm.Data == nil {
		t.Error("the transform changed its input")
	}
	if !notManaged.Matches(labels.Set{}) || notManaged.Matches(labels.Set{"app.kubernetes.io/managed-by": "platform-operator"}) {
		t.Error("notManaged selects the operator's own ConfigMaps, or misses a user's")
	}
}
