package restoresource

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

// TestResolveReadsTheStoreWithItsData: a Secret read without its data (a cache's copy) is an error naming
// the fix, never a refusal or a skipped check; with WithAPIReader, a store that does not answer is a wait
// that names no key. (The store's answers themselves, BackupNotFound and WrongKind, are tested against a
// real S3 server in controllers/homelab/postgresdatabase_restore_test.go.)
func TestResolveReadsTheStoreWithItsData(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = backupv1.AddToScheme(scheme)
	store := &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "main"},
		Spec: backupv1.BackupStoreSpec{Endpoint: "http://127.0.0.1:1", Bucket: "backups", Region: "us-east-1",
			Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"}},
		Status: backupv1.BackupStoreStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reachable",
			LastTransitionTime: metav1.Now()}}}}
	stripped := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s3"}}
	whole := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s3"},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("id"), "AWS_SECRET_ACCESS_KEY": []byte("very-secret-key-value")}}
	build := func(secret *corev1.Secret) client.Client {
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(store.DeepCopy(), secret).WithStatusSubresource(&backupv1.BackupStore{}).Build()
	}
	spec := &backupv1.RestoreSource{Store: "main", SourceName: "app", ID: "20261128T150509Z-0a1b2c3d"}

	cached := build(stripped)
	_, err := Resolve(context.Background(), cached, "team-a", backupv1.SourcePostgresDatabase, spec)
	var refusal *Refusal
	if !errors.Is(err, errCachedSecret) || errors.As(err, &refusal) {
		t.Fatalf("Resolve with a cache's Secret: %v, want errCachedSecret", err)
	}

	_, err = Resolve(context.Background(), cached, "team-a", backupv1.SourcePostgresDatabase, spec, WithAPIReader(build(whole)))
	if !errors.As(err, &refusal) || refusal.Reason != backupv1.ReasonStoreNotReady || !refusal.Wait {
		t.Fatalf("Resolve with a store that does not answer: %v, want a StoreNotReady wait", err)
	}
	if strings.Contains(refusal.Message, "very-secret-key-value") || !strings.Contains(refusal.Message, `BackupStore "main"`) {
		t.Fatalf("message %q", refusal.Message)
	}
}
