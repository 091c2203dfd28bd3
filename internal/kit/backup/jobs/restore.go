package jobs

import (
	"encoding/json"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// Names of a restore's children.
const (
	// ContainerRestore is the restore Job's main container.
	ContainerRestore = "restore"
	// TerminationLog is where the restore writes its result (one JSON line), which the kubelet makes the
	// container's termination message.
	TerminationLog = "/dev/termination-log"
	// restoreApp is the restore children's app.kubernetes.io/name.
	restoreApp = "restore"
)

// RestoreInput is what the restore builders need besides the object restored into (a PostgresDatabase, a
// SojuBouncer: the target): what the controller resolved.
type RestoreInput struct {
	// Target is the target's kind: the Job's owner's, and the artifact's (a backup of the same kind).
	Target schema.GroupVersionKind
	// Store is the BackupStore the artifact is read from.
	Store *backupv1.BackupStore
	// AccessKeyIDKey and SecretAccessKeyKey are the keys of the store's credentials Secret.
	AccessKeyIDKey, SecretAccessKeyKey string
	// CAKey is the key of the store's CA ConfigMap (when it has one).
	CAKey string
	// CredentialsSecret is the Secret (RestoreSecretName) holding the database role's URL under
	// DatabaseURLKey: the restore runs as the role, never as an administrator.
	CredentialsSecret string
	// SourceName and ID name the artifact (of the target's kind, in the target's namespace).
	SourceName, ID string
	// OperatorImage is the operator's own image; PostgresImage pg_restore's (PostgresImage, the server's
	// major version).
	OperatorImage, PostgresImage string
}

// RestoreName is the restore Job's and ConfigMap's name: the target's name with a suffix, within 63
// characters (the Job controller's label limit).
func RestoreName(db metav1.Object) string {
	n := db.GetName()
	if len(n) > 55 {
		n = n[:55]
	}
	return strings.TrimRight(n, "-.") + "-restore"
}

// RestoreSecretName is the Secret holding the role's credentials for the restore Job only, for a target
// whose workload's Secret is written once the restore succeeded, never before (a PostgresDatabase's
// <name>-postgres).
func RestoreSecretName(db metav1.Object) string {
	return RestoreName(db) + "-credentials"
}

// restoreMeta is a restore child's metadata: the operator's labels, controlled by the target.
func restoreMeta(db metav1.Object, target schema.GroupVersionKind, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: db.GetNamespace(), Labels: oplabels.Labels(restoreApp, db.GetName()),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(db, target)}}
}

// RestoreSecret is the restore Job's credentials Secret: creds (the role's Secret as the workload would
// get it, holding DatabaseURLKey) under RestoreSecretName, controlled by the live restore Job, so that
// deleting the Job once the restore succeeded takes the credentials with it (the operator never deletes
// Secrets itself).
func RestoreSecret(db metav1.Object, job *batchv1.Job, creds *corev1.Secret) *corev1.Secret {
	s := creds.DeepCopy()
	s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	s.Name, s.Namespace = RestoreSecretName(db), db.GetNamespace()
	s.Labels = oplabels.Labels(restoreApp, db.GetName())
	s.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	s.ResourceVersion, s.UID, s.CreationTimestamp, s.ManagedFields = "", "", metav1.Time{}, nil
	return s
}

// IsRestoreSecret says whether live is db's restore credentials Secret: controlled by db's restore Job.
func IsRestoreSecret(db metav1.Object, live *corev1.Secret) bool {
	c := metav1.GetControllerOf(live)
	return live.Name == RestoreSecretName(db) && c != nil && c.Kind == "Job" && c.Name == RestoreName(db) &&
		oplabels.IsManaged(live.Labels) && live.Labels[oplabels.InstanceLabel] == db.GetName()
}

// StoreKeys are the keys of store's credentials Secret and CA ConfigMap, their defaults filled in.
func StoreKeys(store *backupv1.BackupStore) (accessKeyID, secretAccessKey, ca string) {
	accessKeyID, secretAccessKey, ca = store.Spec.Credentials.AccessKeyIDKey, store.Spec.Credentials.SecretAccessKeyKey, "ca.crt"
	if accessKeyID == "" {
		accessKeyID = "AWS_ACCESS_KEY_ID"
	}
	if secretAccessKey == "" {
		secretAccessKey = "AWS_SECRET_ACCESS_KEY"
	}
	if store.Spec.CABundle != nil && store.Spec.CABundle.Key != "" {
		ca = store.Spec.CABundle.Key
	}
	return accessKeyID, secretAccessKey, ca
}

// RestoreConfigMap is the ConfigMap holding the restore Job's store configuration file (nothing secret).
func RestoreConfigMap(db metav1.Object, in RestoreInput) (*corev1.ConfigMap, error) {
	doc, err := json.Marshal(StoreFile(in.Store))
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: restoreMeta(db, in.Target, RestoreName(db)), Data: map[string]string{StoreConfigKey: string(doc)}}, nil
}

// RestoreCommand is the restore container's command: the operator's program streams the verified
// artifact into pg_restore against the empty database, its URL read from $DATABASE_URL by the program
// (never on a command line), and writes its result to the termination log.
func RestoreCommand(db metav1.Object, in RestoreInput) []string {
	return []string{Binary, "backup", "restore", "--store-config", StoreConfigDir + "/" + StoreConfigKey,
		"--namespace", db.GetNamespace(), "--kind", in.Target.Kind, "--name", in.SourceName,
		"--id", in.ID, "--target-url-env", DatabaseURLEnv, "--result-file", TerminationLog}
}

// RestoreJob is the Job that restores a backup into a new target's empty database: the backup Job's pod
// (Job) with the restore command, the credentials of in.CredentialsSecret, and the target as its owner.
// It runs once: a failed restore leaves the database unusable, and a new object is what tries again.
func RestoreJob(db metav1.Object, in RestoreInput) *batchv1.Job {
	// The backup Job's builder makes the pod (security context, init container, volumes); a Backup that
	// names the restore's children stands in for the one it reads names from.
	stand := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: db.GetName(), Namespace: db.GetNamespace()},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceKind(in.Target.Kind), Name: in.SourceName}}}
	job := Job(stand, Input{Store: in.Store, AccessKeyIDKey: in.AccessKeyIDKey, SecretAccessKeyKey: in.SecretAccessKeyKey,
		CAKey: in.CAKey, SourceSecret: in.CredentialsSecret, ID: in.ID, OperatorImage: in.OperatorImage, PostgresImage: in.PostgresImage})
	job.ObjectMeta = restoreMeta(db, in.Target, RestoreName(db))
	pod := &job.Spec.Template.Spec
	job.Spec.Template.Labels = oplabels.Labels(restoreApp, db.GetName())
	for i := range pod.Volumes {
		if cm := pod.Volumes[i].ConfigMap; cm != nil && pod.Volumes[i].Name == "store-config" {
			cm.Name = RestoreName(db)
		}
	}
	main := &pod.Containers[0]
	main.Name = ContainerRestore
	main.Command = RestoreCommand(db, in)
	main.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	job.Spec.BackoffLimit = ptr.To[int32](0)
	return job
}
