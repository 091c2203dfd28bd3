package jobs

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
)

func ergoBackup() *backupv1.Backup {
	b := testBackup()
	b.Spec.Source = backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: "chat"}
	return b
}

func datastoreInput(ca bool, uid *int64, toolVersion string) DatastoreInput {
	return DatastoreInput{Store: testStore(ca), AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY",
		CAKey: "bundle.pem", ID: ID(ergoBackup()), OperatorImage: "registry.test/platform-operator:v1",
		ClaimName: "chat-data", DataDir: "/ircd", DataFile: "ircd.db",
		PodSelector: map[string]string{"app.kubernetes.io/name": "ergo", "app.kubernetes.io/instance": "chat"},
		RunAsUser:   uid, Format: backup.FormatBuntDB, ToolVersion: toolVersion}
}

func TestDatastoreJob(t *testing.T) {
	tests := []struct {
		name        string
		in          DatastoreInput
		wantUID     *int64
		wantCommand []string
		wantVolumes []string
	}{
		{
			name:    "off OpenShift: ergo's uid, no CA",
			in:      datastoreInput(false, ptr.To[int64](65532), ""),
			wantUID: ptr.To[int64](65532),
			wantCommand: []string{"/manager", "backup", "put", "--store-config", "/etc/backup-store/store.yaml",
				"--namespace", "team-a", "--kind", "ErgoNetwork", "--name", "chat", "--id", "20261128T150509Z-0a1b2c3d",
				"--format", "buntdb", "--file", "/ircd/ircd.db"},
			wantVolumes: []string{DatastoreVolume, "store-config"},
		},
		{
			name:    "on OpenShift: the uid left to the SCC, a CA, the writer's version",
			in:      datastoreInput(true, nil, "ghcr.io/ergochat/ergo:v2.19.1"),
			wantUID: nil,
			wantCommand: []string{"/manager", "backup", "put", "--store-config", "/etc/backup-store/store.yaml",
				"--namespace", "team-a", "--kind", "ErgoNetwork", "--name", "chat", "--id", "20261128T150509Z-0a1b2c3d",
				"--format", "buntdb", "--file", "/ircd/ircd.db", "--tool-version", "ghcr.io/ergochat/ergo:v2.19.1"},
			wantVolumes: []string{DatastoreVolume, "store-config", "store-ca"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ergoBackup()
			job := DatastoreJob(b, tt.in)

			// Owner and labels: controlled by the Backup, labelled with the source.
			if job.Name != "nightly-backup" || job.Namespace != "team-a" {
				t.Errorf("job %s/%s, want team-a/nightly-backup", job.Namespace, job.Name)
			}
			if len(job.OwnerReferences) != 1 || job.OwnerReferences[0].Kind != "Backup" || job.OwnerReferences[0].Name != "nightly" ||
				!ptr.Deref(job.OwnerReferences[0].Controller, false) {
				t.Errorf("owner references %+v, want the Backup as controller", job.OwnerReferences)
			}
			if job.Labels[backupv1.LabelSourceKind] != "ErgoNetwork" || job.Labels[backupv1.LabelSourceName] != "chat" ||
				job.Labels["app.kubernetes.io/managed-by"] == "" {
				t.Errorf("labels %v, want the operator's and the source's", job.Labels)
			}
			if ptr.Deref(job.Spec.BackoffLimit, -1) != 0 {
				t.Errorf("backoffLimit %v, want 0: a retry would put the same id again", job.Spec.BackoffLimit)
			}

			pod := job.Spec.Template.Spec
			if len(pod.InitContainers) != 0 || len(pod.Containers) != 1 {
				t.Fatalf("%d init containers and %d containers, want the one operator container", len(pod.InitContainers), len(pod.Containers))
			}
			c := pod.Containers[0]
			if c.Image != "registry.test/platform-operator:v1" {
				t.Errorf("image %s, want the operator's", c.Image)
			}
			if !reflect.DeepEqual(c.Command, tt.wantCommand) {
				t.Errorf("command\n %q\nwant\n %q", c.Command, tt.wantCommand)
			}

			// Affinity: required, to the ergo pod's labels, on its node.
			aff := pod.Affinity
			if aff == nil || aff.PodAffinity == nil || len(aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
				t.Fatalf("affinity %+v, want one required pod affinity term", aff)
			}
			term := aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
			if term.TopologyKey != "kubernetes.io/hostname" || !reflect.DeepEqual(term.LabelSelector.MatchLabels, tt.in.PodSelector) ||
				len(term.LabelSelector.MatchExpressions) != 0 {
				t.Errorf("affinity term %+v, want the pod selector on kubernetes.io/hostname", term)
			}
			if aff.NodeAffinity != nil || aff.PodAntiAffinity != nil || len(aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
				t.Errorf("affinity %+v, want the one required term only", aff)
			}

			// The claim, read-only both in the volume and in the mount.
			var names []string
			for _, v := range pod.Volumes {
				names = append(names, v.Name)
				if v.Name == DatastoreVolume {
					if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "chat-data" || !v.PersistentVolumeClaim.ReadOnly {
						t.Errorf("datastore volume %+v, want claim chat-data read-only", v.VolumeSource)
					}
				}
				if v.EmptyDir != nil || v.HostPath != nil || v.Secret != nil {
					t.Errorf("volume %s: %+v, want only the claim and ConfigMaps", v.Name, v.VolumeSource)
				}
			}
			if !reflect.DeepEqual(names, tt.wantVolumes) {
				t.Errorf("volumes %v, want %v", names, tt.wantVolumes)
			}
			for _, m := range c.VolumeMounts {
				if !m.ReadOnly {
					t.Errorf("mount %s at %s is writable, want every mount read-only", m.Name, m.MountPath)
				}
				if m.Name == DatastoreVolume && m.MountPath != "/ircd" {
					t.Errorf("claim mounted at %s, want /ircd", m.MountPath)
				}
			}

			// No secret but the store's keys.
			var env []string
			for _, e := range c.Env {
				env = append(env, e.Name)
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "s3" {
					t.Errorf("env %s = %+v, want a key of the store's Secret", e.Name, e)
				}
			}
			if !slices.Equal(env, []string{AccessKeyIDEnv, SecretAccessKeyEnv}) {
				t.Errorf("env %v, want the store's key pair only", env)
			}
			if ptr.Deref(pod.AutomountServiceAccountToken, true) || ptr.Deref(pod.EnableServiceLinks, true) {
				t.Error("the pod mounts a service account token or gets service links")
			}

			// Restricted, as the source's pod's user.
			sc := pod.SecurityContext
			if !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context %+v, want non-root with RuntimeDefault seccomp", sc)
			}
			for what, got := range map[string]*int64{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup, "fsGroup": sc.FSGroup} {
				if !reflect.DeepEqual(got, tt.wantUID) {
					t.Errorf("%s = %v, want %v", what, ptr.Deref(got, -1), ptr.Deref(tt.wantUID, -1))
				}
			}
			if !reflect.DeepEqual(c.SecurityContext, restricted()) {
				t.Errorf("container security context %+v, want restricted()", c.SecurityContext)
			}
			if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("termination message policy %s", c.TerminationMessagePolicy)
			}
		})
	}
}

// The caller's selector map is not shared with the Job (a later change to it cannot change the Job).
func TestDatastoreJobCopiesSelector(t *testing.T) {
	in := datastoreInput(false, ptr.To[int64](65532), "")
	job := DatastoreJob(ergoBackup(), in)
	in.PodSelector["app.kubernetes.io/name"] = "other"
	got := job.Spec.Template.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels
	if got["app.kubernetes.io/name"] != "ergo" {
		t.Errorf("the Job's selector follows the caller's map: %v", got)
	}
}
