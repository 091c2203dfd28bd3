package jobs

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// Names and paths of a datastore backup's pod.
const (
	// OperatorCommand is the operator's binary in its own image (the Dockerfile's entrypoint): the datastore
	// Job runs it directly, the image being the operator's.
	OperatorCommand = "/manager"
	// DatastoreVolume is the pod's volume of the source's claim.
	DatastoreVolume = "datastore"
	// hostnameTopology puts the backup pod on the node of the pod it follows.
	hostnameTopology = "kubernetes.io/hostname"
)

// DatastoreInput is what DatastoreJob needs besides the Backup: what the controller resolved from the
// source's system (for an ErgoNetwork: internal/irc/ergo).
type DatastoreInput struct {
	// Store is the BackupStore the artifact goes to (Ready).
	Store *backupv1.BackupStore
	// AccessKeyIDKey and SecretAccessKeyKey are the keys of the store's credentials Secret.
	AccessKeyIDKey, SecretAccessKeyKey string
	// CAKey is the key of the store's CA ConfigMap (when it has one).
	CAKey string
	// ID is the backup's id (ID).
	ID string
	// OperatorImage is the operator's own image, which the Job runs.
	OperatorImage string
	// ClaimName is the PersistentVolumeClaim holding the datastore, mounted read-only at DataDir.
	ClaimName string
	// DataDir is where the claim is mounted, and DataFile the datastore's path in it.
	DataDir, DataFile string
	// PodSelector are the labels of the pod that has the claim mounted: the claim being ReadWriteOnce, the
	// backup pod must run on that pod's node (required pod affinity).
	PodSelector map[string]string
	// RunAsUser is the uid (also gid and fsGroup) the source's own pod runs as, who owns the datastore's
	// files; nil leaves it to the platform (OpenShift's SCC assigns the namespace's uid), as the source's pod
	// does.
	RunAsUser *int64
	// Format is the datastore's format (FormatBuntDB for ergo's ircd.db).
	Format backup.Format
	// ToolVersion is recorded in the manifest: what wrote the datastore (the source's image), "" for none.
	ToolVersion string
}

// DatastoreCommand is the datastore container's command: the operator's program uploads the file (put
// --file) and commits the artifact only once all of it is stored, counting the format's facts as it goes.
func DatastoreCommand(b *backupv1.Backup, in DatastoreInput) []string {
	cmd := []string{OperatorCommand, "backup", "put", "--store-config", StoreConfigDir + "/" + StoreConfigKey,
		"--namespace", b.Namespace, "--kind", string(b.Spec.Source.Kind), "--name", b.Spec.Source.Name,
		"--id", in.ID, "--format", string(in.Format), "--file", in.DataDir + "/" + in.DataFile}
	if in.ToolVersion != "" {
		cmd = append(cmd, "--tool-version", in.ToolVersion)
	}
	return cmd
}

// DatastoreJob is the Job that copies a datastore file from its claim to the store: one container in the
// operator's image runs the program on the claim mounted read-only, on the node of the pod that has the
// claim (required pod affinity: the claim is ReadWriteOnce), as the user that pod runs as, so it can read
// the files. Like Job it runs once, with no service account token, Pod Security restricted; its only
// secrets are the store's keys.
func DatastoreJob(b *backupv1.Backup, in DatastoreInput) *batchv1.Job {
	job := datastorePod{store: in.Store, accessKeyIDKey: in.AccessKeyIDKey, secretAccessKeyKey: in.SecretAccessKeyKey,
		caKey: in.CAKey, storeConfigMap: Name(b), image: in.OperatorImage, claim: in.ClaimName, dataDir: in.DataDir,
		readOnly: true, runAsUser: in.RunAsUser, container: ContainerBackup, command: DatastoreCommand(b, in),
	}.job(meta(b), oplabels.Labels(app, b.Name))
	job.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(in.PodSelector)},
			TopologyKey:   hostnameTopology,
		}},
	}}
	return job
}

// datastorePod is the pod skeleton of the Jobs that run the operator's image on a datastore claim (a
// backup's, a restore's): the claim and the store configuration file mounted, the store's keys from its
// Secret, the CA bundle when the store has one, the datastore's owner as the user.
type datastorePod struct {
	store                                     *backupv1.BackupStore
	accessKeyIDKey, secretAccessKeyKey, caKey string
	// storeConfigMap is the ConfigMap holding the store configuration file.
	storeConfigMap string
	image          string
	// claim is mounted at dataDir, read-only when readOnly.
	claim, dataDir string
	readOnly       bool
	// runAsUser is also the group and fsGroup; nil leaves it to the platform.
	runAsUser *int64
	container string
	command   []string
}

// job is the Job running p once (no retries), with no service account token, Pod Security restricted.
func (p datastorePod) job(objectMeta metav1.ObjectMeta, podLabels map[string]string) *batchv1.Job {
	secretEnv := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: p.store.Spec.Credentials.SecretName}, Key: key}}}
	}
	volumes := []corev1.Volume{
		{Name: DatastoreVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: p.claim, ReadOnly: p.readOnly}}},
		{Name: "store-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: p.storeConfigMap}}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: DatastoreVolume, MountPath: p.dataDir, ReadOnly: p.readOnly},
		{Name: "store-config", MountPath: StoreConfigDir, ReadOnly: true},
	}
	if ca := p.store.Spec.CABundle; ca != nil {
		volumes = append(volumes, corev1.Volume{Name: "store-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMapName},
			Items:                []corev1.KeyToPath{{Key: p.caKey, Path: CAFile}}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "store-ca", MountPath: CADir, ReadOnly: true})
	}
	podSecurity := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if p.runAsUser != nil {
		podSecurity.RunAsUser, podSecurity.RunAsGroup, podSecurity.FSGroup = ptr.To(*p.runAsUser), ptr.To(*p.runAsUser), ptr.To(*p.runAsUser)
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: objectMeta,
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurity,
					Containers: []corev1.Container{{
						Name: p.container, Image: p.image,
						Command: p.command,
						Env: []corev1.EnvVar{
							secretEnv(AccessKeyIDEnv, p.accessKeyIDKey),
							secretEnv(SecretAccessKeyEnv, p.secretAccessKeyKey),
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
