package jobs

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
)

func datastoreRestoreInput(ca bool, uid *int64) DatastoreRestoreInput {
	return DatastoreRestoreInput{
		Owner:     metav1.OwnerReference{APIVersion: "irc.josie.cloud/v1alpha1", Kind: "ErgoNetwork", Name: "chat2", UID: "u-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		Namespace: "team-a", Name: "chat2",
		Store: testStore(ca), AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY", CAKey: "bundle.pem",
		Kind: backupv1.SourceErgoNetwork, SourceName: "chat", ID: "20261128T150509Z-0a1b2c3d",
		OperatorImage: "registry.test/platform-operator:v1", ClaimName: "chat2-data", DataDir: "/ircd", DataFile: "ircd.db", RunAsUser: uid,
	}
}

func TestDatastoreRestoreJob(t *testing.T) {
	tests := []struct {
		name        string
		in          DatastoreRestoreInput
		wantUID     *int64
		wantVolumes []string
	}{
		{name: "off OpenShift: ergo's uid, no CA", in: datastoreRestoreInput(false, ptr.To[int64](65532)), wantUID: ptr.To[int64](65532),
			wantVolumes: []string{DatastoreVolume, "store-config"}},
		{name: "on OpenShift: the uid left to the SCC, a CA", in: datastoreRestoreInput(true, nil), wantUID: nil,
			wantVolumes: []string{DatastoreVolume, "store-config", "store-ca"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := DatastoreRestoreJob(tt.in)
			if job.Name != "chat2-datastore-restore" || job.Namespace != "team-a" {
				t.Errorf("job %s/%s", job.Namespace, job.Name)
			}
			if len(job.OwnerReferences) != 1 || job.OwnerReferences[0].Kind != "ErgoNetwork" || !ptr.Deref(job.OwnerReferences[0].Controller, false) {
				t.Errorf("owner references %+v, want the restoring network as controller", job.OwnerReferences)
			}
			if job.Labels["app.kubernetes.io/name"] != "restore" || job.Labels["app.kubernetes.io/instance"] != "chat2" ||
				job.Spec.Template.Labels["app.kubernetes.io/instance"] != "chat2" {
				t.Errorf("labels %v / %v", job.Labels, job.Spec.Template.Labels)
			}
			if ptr.Deref(job.Spec.BackoffLimit, -1) != 0 {
				t.Errorf("backoffLimit %v, want 0: a failed restore is final", job.Spec.BackoffLimit)
			}
			pod := job.Spec.Template.Spec
			if len(pod.InitContainers) != 0 || len(pod.Containers) != 1 {
				t.Fatalf("%d init containers, %d containers", len(pod.InitContainers), len(pod.Containers))
			}
			if pod.Affinity != nil {
				t.Errorf("affinity %+v: nothing else has the new claim mounted", pod.Affinity)
			}
			c := pod.Containers[0]
			if c.Name != ContainerRestore || c.Image != "registry.test/platform-operator:v1" {
				t.Errorf("container %s image %s", c.Name, c.Image)
			}
			want := []string{"/manager", "backup", "restore", "--store-config", "/etc/backup-store/store.yaml",
				"--namespace", "team-a", "--kind", "ErgoNetwork", "--name", "chat", "--id", "20261128T150509Z-0a1b2c3d",
				"--target-file", "/ircd/ircd.db", "--result-file", "/dev/termination-log"}
			if !reflect.DeepEqual(c.Command, want) {
				t.Errorf("command\n %q\nwant\n %q", c.Command, want)
			}
			// The claim read-write (the restore writes into it), everything else read-only.
			var names []string
			for _, v := range pod.Volumes {
				names = append(names, v.Name)
				if v.Name == DatastoreVolume && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "chat2-data" || v.PersistentVolumeClaim.ReadOnly) {
					t.Errorf("datastore volume %+v, want claim chat2-data read-write", v.VolumeSource)
				}
				if v.Name == "store-config" && v.ConfigMap.Name != "chat2-datastore-restore" {
					t.Errorf("store config from %s", v.ConfigMap.Name)
				}
				if v.EmptyDir != nil || v.HostPath != nil || v.Secret != nil {
					t.Errorf("volume %s: %+v", v.Name, v.VolumeSource)
				}
			}
			if !reflect.DeepEqual(names, tt.wantVolumes) {
				t.Errorf("volumes %v, want %v", names, tt.wantVolumes)
			}
			for _, m := range c.VolumeMounts {
				if m.ReadOnly == (m.Name == DatastoreVolume) {
					t.Errorf("mount %s at %s: readOnly %v", m.Name, m.MountPath, m.ReadOnly)
				}
			}
			var env []string
			for _, e := range c.Env {
				env = append(env, e.Name)
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "s3" {
					t.Errorf("env %s = %+v", e.Name, e)
				}
			}
			if !slices.Equal(env, []string{AccessKeyIDEnv, SecretAccessKeyEnv}) {
				t.Errorf("env %v", env)
			}
			if ptr.Deref(pod.AutomountServiceAccountToken, true) || ptr.Deref(pod.EnableServiceLinks, true) {
				t.Error("the pod mounts a service account token or gets service links")
			}
			sc := pod.SecurityContext
			if !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context %+v", sc)
			}
			for what, got := range map[string]*int64{"runAsUser": sc.RunAsUser, "runAsGroup": sc.RunAsGroup, "fsGroup": sc.FSGroup} {
				if !reflect.DeepEqual(got, tt.wantUID) {
					t.Errorf("%s = %v, want %v", what, ptr.Deref(got, -1), ptr.Deref(tt.wantUID, -1))
				}
			}
			if !reflect.DeepEqual(c.SecurityContext, restricted()) {
				t.Errorf("container security context %+v", c.SecurityContext)
			}
		})
	}
}

func TestDatastoreRestoreConfigMapAndName(t *testing.T) {
	cm, err := DatastoreRestoreConfigMap(datastoreRestoreInput(true, nil))
	if err != nil {
		t.Fatal(err)
	}
	var f backup.StoreFile
	if err := json.Unmarshal([]byte(cm.Data[StoreConfigKey]), &f); err != nil {
		t.Fatal(err)
	}
	if cm.Name != "chat2-datastore-restore" || f.Bucket != testStore(true).Spec.Bucket || f.CABundleFile == "" ||
		f.Credentials.AccessKeyIDEnv != AccessKeyIDEnv || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "ErgoNetwork" {
		t.Errorf("ConfigMap %s: %s", cm.Name, cm.Data[StoreConfigKey])
	}
	long := strings.Repeat("a", 60) + "-b"
	if n := DatastoreRestoreName(long); len(n) > 63 || !strings.HasSuffix(n, "-datastore-restore") {
		t.Errorf("DatastoreRestoreName(%q) = %q", long, n)
	}
	if n := DatastoreRestoreName(strings.Repeat("a", 44) + "-bc"); n != strings.Repeat("a", 44)+"-datastore-restore" {
		t.Errorf("a name cut at a dash keeps it: %q", n)
	}
}
