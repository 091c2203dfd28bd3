package jobs

import (
	"encoding/json"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// DatastoreRestoreInput is what the datastore restore builders need: the restoring object and what its
// controller resolved (for an ErgoNetwork: internal/irc/ergo and restoresource).
type DatastoreRestoreInput struct {
	// Owner is the restoring object (a new ErgoNetwork), the controller of the restore's children;
	// Namespace and Name are its namespace and name.
	Owner           metav1.OwnerReference
	Namespace, Name string
	// Store is the BackupStore the artifact is read from.
	Store *backupv1.BackupStore
	// AccessKeyIDKey and SecretAccessKeyKey are the keys of the store's credentials Secret.
	AccessKeyIDKey, SecretAccessKeyKey string
	// CAKey is the key of the store's CA ConfigMap (when it has one).
	CAKey string
	// Kind, SourceName and ID name the artifact (of the restoring object's kind, in its namespace).
	Kind           backupv1.SourceKind
	SourceName, ID string
	// OperatorImage is the operator's own image, which the Job runs.
	OperatorImage string
	// ClaimName is the new object's claim, mounted read-write at DataDir; DataFile is the datastore's path
	// in it, which the restore creates.
	ClaimName         string
	DataDir, DataFile string
	// RunAsUser is the uid (also gid and fsGroup) the object's own pod will run as, who must own the
	// datastore; nil leaves it to the platform (OpenShift's SCC assigns the namespace's uid), as that pod
	// does.
	RunAsUser *int64
}

// DatastoreRestoreName is the datastore restore Job's and ConfigMap's name for the object name: with a
// suffix no other child of the operator uses, within 63 characters (the Job controller's label limit).
func DatastoreRestoreName(name string) string {
	const suffix = "-datastore-restore"
	if len(name) > 63-len(suffix) {
		name = name[:63-len(suffix)]
	}
	return strings.TrimRight(name, "-.") + suffix
}

// datastoreRestoreMeta is a datastore restore child's metadata: the operator's labels, controlled by the
// restoring object.
func datastoreRestoreMeta(in DatastoreRestoreInput) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: DatastoreRestoreName(in.Name), Namespace: in.Namespace, Labels: oplabels.Labels(restoreApp, in.Name),
		OwnerReferences: []metav1.OwnerReference{in.Owner}}
}

// DatastoreRestoreConfigMap is the ConfigMap holding the restore Job's store configuration file (nothing
// secret).
func DatastoreRestoreConfigMap(in DatastoreRestoreInput) (*corev1.ConfigMap, error) {
	doc, err := json.Marshal(StoreFile(in.Store))
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: datastoreRestoreMeta(in), Data: map[string]string{StoreConfigKey: string(doc)}}, nil
}

// DatastoreRestoreCommand is the restore container's command: the operator's program downloads the
// artifact next to the datastore's path, checks it and opens it with the datastore's library, and moves it
// into place only if nothing is there; its result goes to the termination log.
func DatastoreRestoreCommand(in DatastoreRestoreInput) []string {
	return []string{OperatorCommand, "backup", "restore", "--store-config", StoreConfigDir + "/" + StoreConfigKey,
		"--namespace", in.Namespace, "--kind", string(in.Kind), "--name", in.SourceName, "--id", in.ID,
		"--target-file", in.DataDir + "/" + in.DataFile, "--result-file", TerminationLog}
}

// DatastoreRestoreJob is the Job that fills a new object's claim from a backup before its workload starts:
// the datastore backup's pod (the operator's image, the store's keys, the datastore owner's uid) with the
// claim mounted read-write, no pod affinity (nothing else has the claim mounted yet), and the restore
// command. It runs once: a failed restore is final, and a new object is what tries again.
func DatastoreRestoreJob(in DatastoreRestoreInput) *batchv1.Job {
	return datastorePod{store: in.Store, accessKeyIDKey: in.AccessKeyIDKey, secretAccessKeyKey: in.SecretAccessKeyKey,
		caKey: in.CAKey, storeConfigMap: DatastoreRestoreName(in.Name), image: in.OperatorImage, claim: in.ClaimName,
		dataDir: in.DataDir, readOnly: false, runAsUser: in.RunAsUser, container: ContainerRestore,
		command: DatastoreRestoreCommand(in),
	}.job(datastoreRestoreMeta(in), oplabels.Labels(restoreApp, in.Name))
}
