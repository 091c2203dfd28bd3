package jobs

import (
	"encoding/json"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
)

// Paths and names inside a backup pod.
const (
	// SharedDir is the emptyDir the init container copies the operator's binary into.
	SharedDir = "/shared"
	// Binary is the operator's binary as the main container runs it.
	Binary = SharedDir + "/platform-operator"
	// StoreConfigDir holds the store configuration file (from the ConfigMap StoreConfigMap builds).
	StoreConfigDir = "/etc/backup-store"
	// StoreConfigKey is the ConfigMap's key and the file's name.
	StoreConfigKey = "store.yaml"
	// CADir holds the store's CA bundle (from the BackupStore's ConfigMap).
	CADir = "/etc/backup-store-ca"
	// CAFile is the bundle's file name in CADir.
	CAFile = "ca.crt"
	// AccessKeyIDEnv and SecretAccessKeyEnv carry the store's access key pair from its Secret.
	AccessKeyIDEnv     = "BACKUP_STORE_ACCESS_KEY_ID"
	SecretAccessKeyEnv = "BACKUP_STORE_SECRET_ACCESS_KEY"
	// DatabaseURLEnv carries the source's connection URL from its Secret.
	DatabaseURLEnv = "DATABASE_URL"
	// DatabaseURLKey is the key of the source's Secret holding the URL (PostgresDatabase's and
	// SojuBouncer's database Secrets both have it).
	DatabaseURLKey = "url"
	// ContainerBackup is the main container's name; ContainerCopy the init container's.
	ContainerBackup = "backup"
	ContainerCopy   = "copy-binary"
	// app is the children's app.kubernetes.io/name.
	app = "backup"
	// nonRootUID runs both containers: the postgres image's own user is 999, but any non-root id works for
	// pg_dump, which writes only to its standard output.
	nonRootUID = 65532
)

// Input is what the builder needs besides the Backup: what the controller resolved.
type Input struct {
	// Store is the BackupStore the artifact goes to (Ready).
	Store *backupv1.BackupStore
	// AccessKeyIDKey and SecretAccessKeyKey are the keys of the store's credentials Secret.
	AccessKeyIDKey, SecretAccessKeyKey string
	// CAKey is the key of the store's CA ConfigMap (when it has one).
	CAKey string
	// SourceSecret is the source's Secret holding DatabaseURLKey.
	SourceSecret string
	// ID is the backup's id (ID).
	ID string
	// OperatorImage is the operator's own image; PostgresImage pg_dump's (PostgresImage).
	OperatorImage, PostgresImage string
	// ToolVersion is recorded in the manifest ("pg_dump (PostgreSQL) 16"): the major version the image was
	// chosen for.
	ToolVersion string
}

// Name is the Job's and ConfigMap's name for a Backup: the Backup's name, with a suffix that keeps it
// apart from the user's objects (and within 63 characters, the Job controller's label limit).
func Name(b *backupv1.Backup) string {
	n := b.Name
	if len(n) > 56 {
		n = n[:56]
	}
	return strings.TrimRight(n, "-.") + "-backup"
}

// ID is a backup's id: the UTC time the Backup was made (yyyymmddThhmmssZ), so ids sort in time, then the
// first 8 characters of its uid, so two Backups of one second differ.
func ID(b *backupv1.Backup) string {
	uid := strings.ReplaceAll(string(b.UID), "-", "")
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return b.CreationTimestamp.UTC().Format("20060102T150405Z") + "-" + uid
}

// PostgresImage is template (a printf format with %d) for the server's major version.
func PostgresImage(template string, major int) string { return fmt.Sprintf(template, major) }

// StoreFile is the store configuration file the Job reads: the store's description, and where to find
// the credentials (environment variables from the store's Secret) and the CA (a mounted file). It holds
// nothing secret.
func StoreFile(store *backupv1.BackupStore) backup.StoreFile {
	f := backup.StoreFile{Endpoint: store.Spec.Endpoint, Bucket: store.Spec.Bucket, Prefix: store.Spec.Prefix,
		Region:      store.Spec.Region,
		Credentials: backup.CredentialSources{AccessKeyIDEnv: AccessKeyIDEnv, SecretAccessKeyEnv: SecretAccessKeyEnv}}
	if store.Spec.CABundle != nil {
		f.CABundleFile = CADir + "/" + CAFile
	}
	if e := store.Spec.Encryption; e != nil {
		f.Encryption = &objectstore.Encryption{Mode: objectstore.EncryptionMode(e.Mode), KMSKeyID: e.KMSKeyID}
	}
	return f
}

// meta is a child's metadata: labelled as the operator's, controlled by the Backup (so it goes with it).
func meta(b *backupv1.Backup) metav1.ObjectMeta {
	l := oplabels.Labels(app, b.Name)
	l[backupv1.LabelSourceKind] = string(b.Spec.Source.Kind)
	l[backupv1.LabelSourceName] = b.Spec.Source.Name
	return metav1.ObjectMeta{Name: Name(b), Namespace: b.Namespace, Labels: l,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, backupv1.GroupVersion.WithKind("Backup"))}}
}

// StoreConfigMap is the ConfigMap holding the Job's store configuration file.
func StoreConfigMap(b *backupv1.Backup, in Input) (*corev1.ConfigMap, error) {
	doc, err := json.Marshal(StoreFile(in.Store))
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(b),
		Data: map[string]string{StoreConfigKey: string(doc)}}, nil
}

// Command is the main container's command: the operator's program runs pg_dump, records the tables' row
// counts in pg_dump's snapshot, and commits the artifact only when pg_dump exits 0.
func Command(b *backupv1.Backup, in Input) []string {
	cmd := []string{Binary, "backup", "put", "--store-config", StoreConfigDir + "/" + StoreConfigKey,
		"--namespace", b.Namespace, "--kind", string(b.Spec.Source.Kind), "--name", b.Spec.Source.Name,
		"--id", in.ID, "--format", string(backup.FormatPgDumpCustom)}
	if in.ToolVersion != "" {
		cmd = append(cmd, "--tool-version", in.ToolVersion)
	}
	// The facts a restore drill compares with (each table's row count), counted in the snapshot pg_dump is
	// handed, as the same role.
	cmd = append(cmd, "--pg-facts-url-env", DatabaseURLEnv)
	// $(DATABASE_URL) is expanded by the kubelet from the container's env: no shell is needed, and the URL
	// is one argument whatever it holds.
	return append(cmd, "--", "pg_dump", "-Fc", "--no-owner", "--no-privileges", "-d", "$("+DatabaseURLEnv+")")
}

// restricted is the securityContext of both containers: Pod Security's restricted profile, and a
// read-only root filesystem (pg_dump and the program write only to pipes and the network).
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// Job is the Job that dumps a PostgreSQL-backed source (PostgresDatabase, SojuBouncer) to the store: an
// init container in the operator's image copies its static binary into an emptyDir, and the main
// container, in the postgres image of the server's major version, runs it with pg_dump as its producer.
// It runs once (no retries: a retry would need a new id, and a failed put leaves nothing complete), with
// no service account token, as a non-root user.
func Job(b *backupv1.Backup, in Input) *batchv1.Job {
	secretEnv := func(name, secret, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
	}
	volumes := []corev1.Volume{
		{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "store-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: Name(b)}}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "shared", MountPath: SharedDir, ReadOnly: true},
		{Name: "store-config", MountPath: StoreConfigDir, ReadOnly: true},
	}
	if ca := in.Store.Spec.CABundle; ca != nil {
		volumes = append(volumes, corev1.Volume{Name: "store-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMapName},
			Items:                []corev1.KeyToPath{{Key: in.CAKey, Path: CAFile}}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "store-ca", MountPath: CADir, ReadOnly: true})
	}
	m := meta(b)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: m,
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: oplabels.Labels(app, b.Name)},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](nonRootUID), RunAsGroup: ptr.To[int64](nonRootUID),
						FSGroup:        ptr.To[int64](nonRootUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					InitContainers: []corev1.Container{{
						Name: ContainerCopy, Image: in.OperatorImage,
						Command:                  []string{"/manager", "backup", "copy-binary", Binary},
						VolumeMounts:             []corev1.VolumeMount{{Name: "shared", MountPath: SharedDir}},
						SecurityContext:          restricted(),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Containers: []corev1.Container{{
						Name: ContainerBackup, Image: in.PostgresImage,
						Command: Command(b, in),
						Env: []corev1.EnvVar{
							secretEnv(DatabaseURLEnv, in.SourceSecret, DatabaseURLKey),
							secretEnv(AccessKeyIDEnv, in.Store.Spec.Credentials.SecretName, in.AccessKeyIDKey),
							secretEnv(SecretAccessKeyEnv, in.Store.Spec.Credentials.SecretName, in.SecretAccessKeyKey),
						},
						VolumeMounts:             mounts,
						SecurityContext:          restricted(),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: volumes,
				},
			},
		},
	}
}
