package backup

import (
	"strings"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
)

// storeTarget is the index key of a BackupStore's endpoint and bucket: stores with the same key write to
// the same bucket, so their namespaces' roots must not overlap. The endpoint is compared as the client
// reads it: no scheme is https, the host's case and a trailing slash do not count.
func storeTarget(s *backupv1.BackupStore) string {
	ep := strings.TrimSuffix(strings.TrimSpace(s.Spec.Endpoint), "/")
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	return strings.ToLower(ep) + "|" + s.Spec.Bucket
}

// precedes says whether a keeps a contested tree over b: the older store, then the lesser
// namespace/name, so that every reconcile of either store decides the same way.
func precedes(a, b *backupv1.BackupStore) bool {
	at, bt := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !at.Equal(bt) {
		return at.Before(bt)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// prefixConflict says whether store's namespace root lies inside, or contains, the root of a store of
// another namespace on the same endpoint and bucket that precedes it. others are the stores of the same
// target (store itself among them or not). Stores of one namespace never conflict: the tree is theirs.
func prefixConflict(store *backupv1.BackupStore, others []backupv1.BackupStore) bool {
	root := namespaceRoot(store.Spec.Prefix, store.Namespace)
	for i := range others {
		o := &others[i]
		if o.Namespace == store.Namespace || storeTarget(o) != storeTarget(store) || !o.DeletionTimestamp.IsZero() {
			continue
		}
		other := namespaceRoot(o.Spec.Prefix, o.Namespace)
		if (strings.HasPrefix(root, other) || strings.HasPrefix(other, root)) && precedes(o, store) {
			return true
		}
	}
	return false
}
