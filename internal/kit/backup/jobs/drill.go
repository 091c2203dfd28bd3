package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// Names and bounds of a restore drill's children.
const (
	// ContainerDrill is the drill Job's main container.
	ContainerDrill = "drill"
	// drillApp is the drill children's app.kubernetes.io/name.
	drillApp = "drill"
	// drillSuffix ends the name of a drill's children.
	drillSuffix = "-drill"
	// maxDrillName keeps the name a valid label value (the Job controller labels the pods with the Job's
	// name) and a valid PostgresDatabase name.
	maxDrillName = 63
)

// DrillName is the name of a Backup's scratch PostgresDatabase and drill Job: <backup>-drill, or, when that
// is longer than 63 characters, the Backup's name cut, a hash of the whole name and -drill, so two long
// names that share a beginning still get two names.
func DrillName(b *backupv1.Backup) string {
	if len(b.Name)+len(drillSuffix) <= maxDrillName {
		return b.Name + drillSuffix
	}
	sum := sha256.Sum256([]byte(b.Name))
	h := hex.EncodeToString(sum[:])[:8]
	n := strings.TrimRight(b.Name[:maxDrillName-len(drillSuffix)-len(h)-1], "-.")
	return n + "-" + h + drillSuffix
}

// DrillLabels are the labels of a drill's children: the operator's, the Backup's source, and
// backup.josie.cloud/drill-of naming the Backup.
func DrillLabels(b *backupv1.Backup) map[string]string {
	l := oplabels.Labels(drillApp, b.Name)
	l[backupv1.LabelDrillOf] = b.Name
	l[backupv1.LabelSourceKind] = string(b.Spec.Source.Kind)
	l[backupv1.LabelSourceName] = b.Spec.Source.Name
	return l
}

// drillMeta is a drill child's metadata: DrillName, DrillLabels, controlled by the Backup.
func drillMeta(b *backupv1.Backup) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: DrillName(b), Namespace: b.Namespace, Labels: DrillLabels(b),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, backupv1.GroupVersion.WithKind("Backup"))}}
}

// ScratchDatabase is the empty database a drill restores into: a PostgresDatabase in the Backup's
// namespace on the source's own PostgresConnection (the server a restore would use, which the namespace is
// already allowed on), with reclaimPolicy Delete, so that deleting it after the drill drops the database
// and its role. It is controlled by the Backup, and goes with it.
func ScratchDatabase(b *backupv1.Backup, source *homelabv1.PostgresDatabase) *homelabv1.PostgresDatabase {
	return ScratchDatabaseOn(b, source.Spec.Connection)
}

// ScratchDatabaseOn is ScratchDatabase on the PostgresConnection named connection.
func ScratchDatabaseOn(b *backupv1.Backup, connection string) *homelabv1.PostgresDatabase {
	return &homelabv1.PostgresDatabase{
		TypeMeta:   metav1.TypeMeta{APIVersion: homelabv1.GroupVersion.String(), Kind: "PostgresDatabase"},
		ObjectMeta: drillMeta(b),
		Spec: homelabv1.PostgresDatabaseSpec{Connection: connection,
			ReclaimPolicy: homelabv1.DatabaseReclaimDelete},
	}
}

// ScratchConnection is the PostgresConnection of a SojuBouncer drill's scratch database: the bouncer's
// server, reached with the admin Secret the bouncer itself names (spec.database.adminSecretName, in the
// namespace: the format of a PostgresConnection's Secret), for the namespace alone (no
// allowedNamespaces). It is named DrillName and controlled by the scratch PostgresDatabase (scratch,
// as applied: its UID set), so the garbage collector deletes it only once that database is gone, after
// its finalizer dropped the database and role through it.
func ScratchConnection(b *backupv1.Backup, scratch *homelabv1.PostgresDatabase, adminSecret string) *homelabv1.PostgresConnection {
	m := drillMeta(b)
	m.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(scratch, homelabv1.GroupVersion.WithKind("PostgresDatabase"))}
	return &homelabv1.PostgresConnection{
		TypeMeta:   metav1.TypeMeta{APIVersion: homelabv1.GroupVersion.String(), Kind: "PostgresConnection"},
		ObjectMeta: m,
		Spec:       homelabv1.PostgresConnectionSpec{Secret: adminSecret},
	}
}

// DrillInput is what the drill Job's builder needs besides the Backup: what the controller resolved.
type DrillInput struct {
	// Store is the Backup's BackupStore (Ready); the Job mounts the Backup's store ConfigMap (Name),
	// which the controller applies again from it before the drill.
	Store *backupv1.BackupStore
	// AccessKeyIDKey and SecretAccessKeyKey are the keys of the store's credentials Secret.
	AccessKeyIDKey, SecretAccessKeyKey string
	// CAKey is the key of the store's CA ConfigMap (when it has one).
	CAKey string
	// ScratchSecret is the scratch PostgresDatabase's Secret, holding its role's URL under DatabaseURLKey.
	ScratchSecret string
	// OperatorImage is the operator's own image; PostgresImage pg_restore's (DrillMajor's version).
	OperatorImage, PostgresImage string
}

// DrillCommand is the drill container's command: the operator's program restores the Backup's artifact
// into the scratch database, its URL read from $DATABASE_URL by the program (never on a command line),
// compares it with the facts recorded at backup time and writes its result line to the termination log.
func DrillCommand(b *backupv1.Backup) []string {
	return []string{Binary, "backup", "verify", "--store-config", StoreConfigDir + "/" + StoreConfigKey,
		"--namespace", b.Namespace, "--kind", string(b.Spec.Source.Kind), "--name", b.Spec.Source.Name,
		"--id", b.Status.ID, "--scratch-url-env", DatabaseURLEnv, "--result-file", TerminationLog}
}

// DrillJob is the Job that runs a Backup's restore drill: the backup Job's pod (Job: security context,
// copy-binary, the store file and CA) with the verify command, the scratch database's credentials and
// the Backup as its owner. It runs once; the controller bounds it (activeDeadlineSeconds).
func DrillJob(b *backupv1.Backup, in DrillInput) *batchv1.Job {
	job := Job(b, Input{Store: in.Store, AccessKeyIDKey: in.AccessKeyIDKey, SecretAccessKeyKey: in.SecretAccessKeyKey,
		CAKey: in.CAKey, SourceSecret: in.ScratchSecret, ID: b.Status.ID, OperatorImage: in.OperatorImage, PostgresImage: in.PostgresImage})
	job.ObjectMeta = drillMeta(b)
	job.Spec.Template.Labels = oplabels.Labels(drillApp, b.Name)
	job.Spec.BackoffLimit = ptr.To[int32](0)
	main := &job.Spec.Template.Spec.Containers[0]
	main.Name = ContainerDrill
	main.Command = DrillCommand(b)
	return job
}

// DatastoreDrillCommand is the command of a datastore drill (an ErgoNetwork backup): the operator's
// program, run from its own image, downloads the artifact (checksum checked) to TMPDIR, opens it with the
// datastore's library as the workload would, compares its counts with the facts recorded at backup time,
// and writes its result line to the termination log. There is no scratch object: the opened copy is
// the restore, and it is deleted with the pod.
func DatastoreDrillCommand(b *backupv1.Backup) []string {
	return []string{OperatorCommand, "backup", "verify", "--store-config", StoreConfigDir + "/" + StoreConfigKey,
		"--namespace", b.Namespace, "--kind", string(b.Spec.Source.Kind), "--name", b.Spec.Source.Name,
		"--id", b.Status.ID, "--result-file", TerminationLog}
}

// DrillTmpDir is where a datastore drill downloads the artifact: an emptyDir, the root filesystem
// being read-only.
const DrillTmpDir = "/tmp"

// DatastoreDrillJob is the Job that runs a datastore Backup's drill: the backup Job's pod (Job: security
// context, the store file, CA and keys) without the copy-binary init container and the database's
// credentials, one container in the operator's own image running DatastoreDrillCommand with an emptyDir
// for TMPDIR. It runs once; the controller bounds it (activeDeadlineSeconds).
func DatastoreDrillJob(b *backupv1.Backup, in DrillInput) *batchv1.Job {
	job := Job(b, Input{Store: in.Store, AccessKeyIDKey: in.AccessKeyIDKey, SecretAccessKeyKey: in.SecretAccessKeyKey,
		CAKey: in.CAKey, ID: b.Status.ID, OperatorImage: in.OperatorImage, PostgresImage: in.OperatorImage})
	job.ObjectMeta = drillMeta(b)
	job.Spec.Template.Labels = oplabels.Labels(drillApp, b.Name)
	job.Spec.BackoffLimit = ptr.To[int32](0)
	pod := &job.Spec.Template.Spec
	pod.InitContainers = nil
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == "shared" {
			pod.Volumes[i].Name = "tmp"
		}
	}
	main := &pod.Containers[0]
	main.Name = ContainerDrill
	main.Command = DatastoreDrillCommand(b)
	var env []corev1.EnvVar
	for _, e := range main.Env {
		if e.Name != DatabaseURLEnv {
			env = append(env, e)
		}
	}
	main.Env = append(env, corev1.EnvVar{Name: "TMPDIR", Value: DrillTmpDir})
	for i := range main.VolumeMounts {
		if main.VolumeMounts[i].Name == "shared" {
			main.VolumeMounts[i] = corev1.VolumeMount{Name: "tmp", MountPath: DrillTmpDir}
		}
	}
	return job
}

// toolMajor reads the major version out of a manifest's tool version ("pg_dump (PostgreSQL) 16.4").
var toolMajor = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// DrillMajor is the major version of pg_restore's image for a drill: the server's, or the pg_dump's that
// wrote the dump when that is newer (pg_restore must be as new as the pg_dump that wrote the dump, and
// reads into older servers).
func DrillMajor(server int, toolVersion string) int {
	m := toolMajor.FindStringSubmatch(toolVersion)
	if m == nil {
		return server
	}
	dump, err := strconv.Atoi(m[1])
	if err != nil {
		return server
	}
	return max(server, dump)
}

// ParseResult reads the program's result line (backup verify, backup restore) out of a container's
// termination message; false when the message holds none (the program never ran, or died before it could
// write it).
func ParseResult(message string) (backup.VerifyResult, bool) {
	var res backup.VerifyResult
	msg := strings.TrimSpace(message)
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		msg = msg[i+1:] // FallbackToLogsOnError: the end of the log, whose last line is the result
	}
	if json.Unmarshal([]byte(msg), &res) != nil || res.Result == "" || res.Reason == "" {
		return backup.VerifyResult{}, false
	}
	return res, true
}
