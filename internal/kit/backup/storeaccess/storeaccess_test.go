package storeaccess

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

const secretValue = "very-secret-key-value"

func store(ns string, ca bool) *backupv1.BackupStore {
	s := &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: backupv1.BackupStoreSpec{Endpoint: "http://127.0.0.1:7070", Bucket: "backups", Prefix: "prod", Region: "us-east-1",
			Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"}}}
	if ca {
		s.Spec.CABundle = &backupv1.BackupStoreCA{ConfigMapName: "ca"}
	}
	return s
}

func credentials(ns string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// TestConfig: the Secret and CA ConfigMap are read in the store's namespace only; what is missing is a
// Refusal the user fixes, naming the key, never its value; a valid pair gives a validated configuration.
func TestConfig(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = backupv1.AddToScheme(scheme)
	full := map[string]string{"AWS_ACCESS_KEY_ID": "id\n", "AWS_SECRET_ACCESS_KEY": secretValue}
	tests := []struct {
		name    string
		ca      bool
		objects []client.Object
		reason  string // "" = a configuration
		message string
	}{
		{name: "valid", objects: []client.Object{credentials("team-a", full)}},
		{name: "no Secret", reason: backupv1.ReasonSecretMissing, message: `Secret "s3" named by spec.credentials.secretName does not exist`},
		{name: "the Secret of another namespace is not read", objects: []client.Object{credentials("team-b", full)},
			reason: backupv1.ReasonSecretMissing, message: "does not exist"},
		{name: "a key missing", objects: []client.Object{credentials("team-a", map[string]string{"AWS_ACCESS_KEY_ID": "id"})},
			reason: backupv1.ReasonSecretMissing, message: "AWS_SECRET_ACCESS_KEY"},
		{name: "CA ConfigMap missing", ca: true, objects: []client.Object{credentials("team-a", full)},
			reason: backupv1.ReasonSecretMissing, message: `ConfigMap "ca" named by spec.caBundle does not exist`},
		{name: "CA not PEM", ca: true, objects: []client.Object{credentials("team-a", full),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ca"}, Data: map[string]string{"ca.crt": "not a certificate"}}},
			reason: backupv1.ReasonInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objects...).Build()
			cfg, err := Config(context.Background(), c, store("team-a", tt.ca))
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Credentials.AccessKeyID != "id" || cfg.Credentials.SecretAccessKey != secretValue || cfg.Bucket != "backups" || cfg.Prefix != "prod" {
					t.Fatalf("config %+v (a trailing newline is no part of a key)", cfg)
				}
				return
			}
			var ref *Refusal
			if !errors.As(err, &ref) || ref.Reason != tt.reason || Reason(err) != tt.reason {
				t.Fatalf("error %v, want a Refusal %s", err, tt.reason)
			}
			if !strings.Contains(ref.Message, tt.message) || strings.Contains(ref.Message, secretValue) {
				t.Fatalf("message %q: want %q, and never the key's value", ref.Message, tt.message)
			}
		})
	}
}

func TestReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&Refusal{Reason: backupv1.ReasonSecretMissing}, backupv1.ReasonSecretMissing},
		{fmt.Errorf("get: %w", objectstore.ErrCredentials), backupv1.ReasonCredentialsRefused},
		{fmt.Errorf("get: %w", objectstore.ErrNoBucket), backupv1.ReasonBucketMissing},
		{errors.New("connection refused"), backupv1.ReasonStoreUnreachable},
	}
	for _, tt := range tests {
		if got := Reason(tt.err); got != tt.want {
			t.Errorf("Reason(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}
