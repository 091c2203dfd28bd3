package backup

import (
	"context"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// accessKeyIDKey, secretAccessKeyKey and caKey are store's credentials Secret's keys and CA ConfigMap's key,
// defaults included (jobs.StoreKeys: the one place that knows them, shared with the restore Jobs).
func accessKeyIDKey(store *backupv1.BackupStore) string {
	k, _, _ := jobs.StoreKeys(store)
	return k
}

func secretAccessKeyKey(store *backupv1.BackupStore) string {
	_, k, _ := jobs.StoreKeys(store)
	return k
}

func caKey(store *backupv1.BackupStore) string {
	_, _, k := jobs.StoreKeys(store)
	return k
}

// refusal is a store the operator cannot use for a reason the user fixes: a condition reason and a
// message that names no credential.
type refusal struct {
	reason, message string
}

func (r *refusal) Error() string { return r.message }

// baseConfig is the store's description without credentials or CA: what a Job's store file names.
func baseConfig(store *backupv1.BackupStore) objectstore.Config {
	cfg := objectstore.Config{Endpoint: store.Spec.Endpoint, Bucket: store.Spec.Bucket, Prefix: store.Spec.Prefix,
		Region: store.Spec.Region}
	if e := store.Spec.Encryption; e != nil {
		cfg.Encryption = &objectstore.Encryption{Mode: objectstore.EncryptionMode(e.Mode), KMSKeyID: e.KMSKeyID}
	}
	return cfg
}

// resolveStore reads the credentials Secret and the CA ConfigMap of store (in its namespace only: a
// reference never leaves the referrer's namespace) and returns the validated configuration. A *refusal
// is the user's to fix; any other error is the API server's and is retried.
func resolveStore(ctx context.Context, reader client.Reader, store *backupv1.BackupStore) (objectstore.Config, error) {
	cfg := baseConfig(store)
	var secret corev1.Secret
	name := store.Spec.Credentials.SecretName
	err := reader.Get(ctx, client.ObjectKey{Namespace: store.Namespace, Name: name}, &secret)
	if apierrors.IsNotFound(err) {
		return cfg, &refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("Secret %q named by spec.credentials.secretName does not exist", name)}
	}
	if err != nil {
		return cfg, fmt.Errorf("read the credentials Secret: %w", err)
	}
	var missing []string
	for _, k := range []string{accessKeyIDKey(store), secretAccessKeyKey(store)} {
		if len(secret.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return cfg, &refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("Secret %q has no (or an empty) key %s", name, strings.Join(missing, ", "))}
	}
	// A trailing newline (kubectl create secret --from-file keeps it) is no part of a key, as the
	// program's store file reader also drops it.
	cfg.Credentials = objectstore.Credentials{
		AccessKeyID:     strings.TrimRight(string(secret.Data[accessKeyIDKey(store)]), "\r\n"),
		SecretAccessKey: strings.TrimRight(string(secret.Data[secretAccessKeyKey(store)]), "\r\n"),
	}
	if ca := store.Spec.CABundle; ca != nil {
		var cm corev1.ConfigMap
		err := reader.Get(ctx, client.ObjectKey{Namespace: store.Namespace, Name: ca.ConfigMapName}, &cm)
		if apierrors.IsNotFound(err) {
			return cfg, &refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("ConfigMap %q named by spec.caBundle does not exist", ca.ConfigMapName)}
		}
		if err != nil {
			return cfg, fmt.Errorf("read the CA ConfigMap: %w", err)
		}
		bundle, ok := cm.Data[caKey(store)]
		if !ok || bundle == "" {
			return cfg, &refusal{backupv1.ReasonSecretMissing, fmt.Sprintf("ConfigMap %q has no key %s", ca.ConfigMapName, caKey(store))}
		}
		cfg.CABundle = []byte(bundle)
	}
	if err := cfg.Validate(); err != nil {
		// Validate's errors name no credential.
		return cfg, &refusal{backupv1.ReasonInvalid, err.Error()}
	}
	return cfg, nil
}

// namespaceRoot is the key prefix of a namespace's tree in the store: <prefix>/<namespace>/.
func namespaceRoot(prefix, namespace string) string {
	if prefix == "" {
		return namespace + "/"
	}
	return path.Join(prefix, namespace) + "/"
}

// location is the s3:// URL of key in bucket.
func location(bucket, key string) string { return "s3://" + bucket + "/" + key }
