// Package storeaccess opens a BackupStore from the operator's side: its credentials Secret and CA
// ConfigMap read in the store's own namespace, the validated objectstore configuration, and the store's
// repository scoped to that namespace. It is the one opening of a store shared by the backup controllers
// and by every restore's pre-check (restoresource), and it says why a store cannot be used with a
// condition reason and a message that never names a credential.
package storeaccess

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// Refusal is a store the operator cannot use for a reason the user fixes: a condition reason and a
// message that names no credential.
type Refusal struct {
	Reason, Message string
}

func (r *Refusal) Error() string { return r.Message }

// BaseConfig is the store's description without credentials or CA: what a Job's store file names.
func BaseConfig(store *backupv1.BackupStore) objectstore.Config {
	cfg := objectstore.Config{Endpoint: store.Spec.Endpoint, Bucket: store.Spec.Bucket, Prefix: store.Spec.Prefix,
		Region: store.Spec.Region}
	if e := store.Spec.Encryption; e != nil {
		cfg.Encryption = &objectstore.Encryption{Mode: objectstore.EncryptionMode(e.Mode), KMSKeyID: e.KMSKeyID}
	}
	return cfg
}

// Config reads the credentials Secret and the CA ConfigMap of store (in its namespace only: a reference
// never leaves the referrer's namespace) with reader, which must return their data (an API reader: the
// manager's cache keeps only the identity of the users' Secrets), and returns the validated
// configuration. A *Refusal is the user's to fix; any other error is the API server's and is retried.
func Config(ctx context.Context, reader client.Reader, store *backupv1.BackupStore) (objectstore.Config, error) {
	cfg := BaseConfig(store)
	idKey, secretKey, caKey := jobs.StoreKeys(store)
	var secret corev1.Secret
	name := store.Spec.Credentials.SecretName
	err := reader.Get(ctx, client.ObjectKey{Namespace: store.Namespace, Name: name}, &secret)
	if apierrors.IsNotFound(err) {
		return cfg, &Refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("Secret %q named by spec.credentials.secretName does not exist", name)}
	}
	if err != nil {
		return cfg, fmt.Errorf("read the credentials Secret: %w", err)
	}
	var missing []string
	for _, k := range []string{idKey, secretKey} {
		if len(secret.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return cfg, &Refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("Secret %q has no (or an empty) key %s", name, strings.Join(missing, ", "))}
	}
	// A trailing newline (kubectl create secret --from-file keeps it) is no part of a key, as the
	// program's store file reader also drops it.
	cfg.Credentials = objectstore.Credentials{
		AccessKeyID:     strings.TrimRight(string(secret.Data[idKey]), "\r\n"),
		SecretAccessKey: strings.TrimRight(string(secret.Data[secretKey]), "\r\n"),
	}
	if ca := store.Spec.CABundle; ca != nil {
		var cm corev1.ConfigMap
		err := reader.Get(ctx, client.ObjectKey{Namespace: store.Namespace, Name: ca.ConfigMapName}, &cm)
		if apierrors.IsNotFound(err) {
			return cfg, &Refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("ConfigMap %q named by spec.caBundle does not exist", ca.ConfigMapName)}
		}
		if err != nil {
			return cfg, fmt.Errorf("read the CA ConfigMap: %w", err)
		}
		bundle, ok := cm.Data[caKey]
		if !ok || bundle == "" {
			return cfg, &Refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("ConfigMap %q has no key %s", ca.ConfigMapName, caKey)}
		}
		cfg.CABundle = []byte(bundle)
	}
	if err := cfg.Validate(); err != nil {
		// Validate's errors name no credential.
		return cfg, &Refusal{backupv1.ReasonInvalid, err.Error()}
	}
	return cfg, nil
}

// Repository is the repository of store's namespace in store: the only tree of the store the namespace's
// objects read and write.
func Repository(ctx context.Context, reader client.Reader, store *backupv1.BackupStore) (*backup.Repository, error) {
	cfg, err := Config(ctx, reader, store)
	if err != nil {
		return nil, err
	}
	st, err := objectstore.New(cfg)
	if err != nil {
		return nil, err
	}
	scoped, err := st.Scope(store.Namespace)
	if err != nil {
		return nil, err
	}
	return backup.NewRepository(scoped), nil
}

// Reason is the condition reason of an error of Config, Repository or a repository's call: a Refusal's
// own, CredentialsRefused, BucketMissing, else StoreUnreachable.
func Reason(err error) string {
	var ref *Refusal
	switch {
	case errors.As(err, &ref):
		return ref.Reason
	case errors.Is(err, objectstore.ErrCredentials):
		return backupv1.ReasonCredentialsRefused
	case errors.Is(err, objectstore.ErrNoBucket):
		return backupv1.ReasonBucketMissing
	}
	return backupv1.ReasonStoreUnreachable
}
