package backup

// What opens a store (its Secret, CA ConfigMap and repository) is the kit's: internal/kit/backup/storeaccess.

import (
	"path"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
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

// namespaceRoot is the key prefix of a namespace's tree in the store: <prefix>/<namespace>/.
func namespaceRoot(prefix, namespace string) string {
	if prefix == "" {
		return namespace + "/"
	}
	return path.Join(prefix, namespace) + "/"
}

// location is the s3:// URL of key in bucket.
func location(bucket, key string) string { return "s3://" + bucket + "/" + key }
