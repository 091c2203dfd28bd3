// Package restoresource resolves an object's spec.restore (a backup.josie.cloud RestoreSource) to the
// artifact a restore reads: the one reading of a restore source shared by every kind that restores
// (PostgresDatabase, SojuBouncer, ErgoNetwork). Everything is read in the restoring object's own namespace,
// and the artifact is looked up in the store (its manifest, through storeaccess) before any Job is made.
package restoresource

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/storeaccess"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// manifestTimeout bounds the pre-check's reads of the store: a store that does not answer is a wait,
// never a reconcile that hangs.
const manifestTimeout = 15 * time.Second

// Option changes how Resolve reads.
type Option func(*options)

type options struct {
	secrets client.Reader
	// api says secrets is an API reader (WithAPIReader), whose Secrets hold their data.
	api bool
}

// WithAPIReader reads the store's credentials Secret and CA ConfigMap with r (an uncached reader) instead
// of Resolve's reader: the manager's cache keeps only the identity of users' Secrets, so a controller
// that passes its cached client to Resolve passes its API reader here.
func WithAPIReader(r client.Reader) Option { return func(o *options) { o.secrets, o.api = r, true } }

// errCachedSecret is a credentials Secret read through a cache that keeps Secrets without their data
// (the operator's manager does): the caller must pass WithAPIReader. It is an error, retried and shown,
// never a refusal the user would be asked to fix.
var errCachedSecret = errors.New("the store's credentials Secret was read without its data (a cache that keeps only Secrets' identity): the controller must pass restoresource.WithAPIReader")

// Source is the artifact a restore reads.
type Source struct {
	// Backup is the Backup named by spec.restore.backup, empty for the store form.
	Backup string
	// Store is the Ready BackupStore holding the artifact.
	Store *backupv1.BackupStore
	// SourceName and ID name the artifact in the store (the source object's name and the backup's id).
	SourceName, ID string
}

// RestoredFrom is what status.restoredFrom records of s once its restore completed at t.
func (s *Source) RestoredFrom(t metav1.Time) *backupv1.RestoredFrom {
	return &backupv1.RestoredFrom{Backup: s.Backup, Store: s.Store.Name, SourceName: s.SourceName, ID: s.ID, Time: t}
}

// Refusal is a restore source that cannot be used (yet): the Restored condition's reason and message, and
// whether it is a wait (a Backup not yet Completed, a store not yet Ready or not yet made) rather than final.
type Refusal struct {
	Reason, Message string
	Wait            bool
}

func (r *Refusal) Error() string { return r.Message }

// Resolve finds spec's artifact for an object of kind in namespace: a Backup of that namespace that is
// Completed and of the same kind, or a store, source name and id; the store must exist and be Ready, and
// hold the artifact's manifest (a complete artifact) of kind, in a format of kind. A *Refusal says why it
// cannot: BackupNotFound naming the id when the store has no such artifact (an id mistyped, an artifact
// pruned or deleted), WrongKind when it is another kind's, a wait when the store cannot be read now; any
// other error is the API server's. No credential appears in a Refusal's message.
func Resolve(ctx context.Context, c client.Reader, namespace string, kind backupv1.SourceKind, spec *backupv1.RestoreSource, opts ...Option) (*Source, error) {
	o := options{secrets: c}
	for _, opt := range opts {
		opt(&o)
	}
	src := &Source{Backup: spec.Backup, SourceName: spec.SourceName, ID: spec.ID}
	storeName := spec.Store
	if spec.Backup != "" {
		b := &backupv1.Backup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: spec.Backup}, b); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, &Refusal{backupv1.ReasonBackupNotFound, fmt.Sprintf("Backup %q does not exist in namespace %s", spec.Backup, namespace), true}
			}
			return nil, err
		}
		if b.Spec.Source.Kind != kind {
			return nil, &Refusal{backupv1.ReasonWrongKind, fmt.Sprintf("Backup %q is a backup of a %s, not of a %s", b.Name, b.Spec.Source.Kind, kind), false}
		}
		if b.Status.Phase != backupv1.BackupCompleted || b.Status.ID == "" {
			phase := string(b.Status.Phase)
			if phase == "" {
				phase = "not started"
			}
			return nil, &Refusal{backupv1.ReasonBackupNotCompleted, fmt.Sprintf("Backup %q is %s; the restore waits until it is Completed", b.Name, phase), true}
		}
		storeName, src.SourceName, src.ID = b.Spec.Store, b.Spec.Source.Name, b.Status.ID
	}
	store := &backupv1.BackupStore{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: storeName}, store); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &Refusal{backupv1.ReasonBackupNotFound, fmt.Sprintf("BackupStore %q does not exist in namespace %s", storeName, namespace), true}
		}
		return nil, err
	}
	if !meta.IsStatusConditionTrue(store.Status.Conditions, reconcile.ConditionReady) {
		return nil, &Refusal{backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q is not Ready", storeName), true}
	}
	src.Store = store
	if err := checkArtifact(ctx, o.secrets, o.api, store, namespace, kind, src); err != nil {
		return nil, err
	}
	return src, nil
}

// formats are the artifact formats a kind restores from.
var formats = map[backupv1.SourceKind]backup.Format{
	backupv1.SourcePostgresDatabase: backup.FormatPgDumpCustom,
	backupv1.SourceSojuBouncer:      backup.FormatPgDumpCustom,
	backupv1.SourceErgoNetwork:      backup.FormatBuntDB,
}

// checkArtifact reads src's manifest from the store: the restore starts only from an artifact that is
// there, complete, and of kind. When it is missing, the same source name and id under another kind make
// it a WrongKind (a store form naming another kind's backup) rather than a BackupNotFound.
func checkArtifact(ctx context.Context, secrets client.Reader, api bool, store *backupv1.BackupStore, namespace string, kind backupv1.SourceKind, src *Source) error {
	if !api {
		var secret corev1.Secret
		err := secrets.Get(ctx, client.ObjectKey{Namespace: store.Namespace, Name: store.Spec.Credentials.SecretName}, &secret)
		if err == nil && len(secret.Data) == 0 {
			// A store is Ready only with a usable Secret: an empty one here is a cache's copy.
			return errCachedSecret
		}
	}
	repo, err := storeaccess.Repository(ctx, secrets, store)
	var refusal *storeaccess.Refusal
	switch {
	case errors.As(err, &refusal):
		return &Refusal{backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q cannot be opened: %s", store.Name, refusal.Message), true}
	case err != nil:
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, manifestTimeout)
	defer cancel()
	ref := backup.Ref{Namespace: namespace, Kind: string(kind), Name: src.SourceName, ID: src.ID}
	m, err := repo.Manifest(ctx, ref)
	switch {
	case errors.Is(err, backup.ErrIncomplete):
		for other := range formats {
			if other == kind {
				continue
			}
			oref := ref
			oref.Kind = string(other)
			if _, oerr := repo.Manifest(ctx, oref); oerr == nil {
				return &Refusal{backupv1.ReasonWrongKind, fmt.Sprintf("BackupStore %q holds backup %s of %s %q, a %s, not a %s",
					store.Name, src.ID, other, src.SourceName, other, kind), false}
			}
		}
		what := fmt.Sprintf("BackupStore %q holds no complete backup %s of %s %q", store.Name, src.ID, kind, src.SourceName)
		if src.Backup != "" {
			what += fmt.Sprintf(" (the artifact of Backup %q: pruned, deleted, or never committed)", src.Backup)
		}
		return &Refusal{backupv1.ReasonBackupNotFound, what, false}
	case err != nil:
		// The store's errors name no credential (objectstore keeps them out).
		return &Refusal{backupv1.ReasonStoreNotReady, fmt.Sprintf("BackupStore %q could not be read (%s): %v; the restore waits",
			store.Name, storeaccess.Reason(err), err), true}
	}
	if want := formats[kind]; want != "" && m.Format != want {
		return &Refusal{backupv1.ReasonWrongKind, fmt.Sprintf("backup %s of %s %q in BackupStore %q is of format %s, not %s",
			src.ID, kind, src.SourceName, store.Name, m.Format, want), false}
	}
	return nil
}
