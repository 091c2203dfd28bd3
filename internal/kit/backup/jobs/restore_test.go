package jobs

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func testDatabase(name string) *homelabv1.PostgresDatabase {
	return &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: "u-1"}}
}

func testRestoreInput(ca bool, major int) RestoreInput {
	return RestoreInput{Target: homelabv1.GroupVersion.WithKind("PostgresDatabase"), Store: testStore(ca), AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY",
		CAKey: "bundle.pem", CredentialsSecret: "app-restore-credentials", SourceName: "old-app", ID: "20261128T150509Z-0a1b2c3d",
		OperatorImage: "registry.test/platform-operator:v1", PostgresImage: PostgresImage("docker.io/library/postgres:%d", major)}
}

// TestRestoreJob: the restore Job's pod is the backup Job's (security context, copy-binary, store file,
// CA), with the restore command, the role's credentials Secret and the PostgresDatabase as owner.
func TestRestoreJob(t *testing.T) {
	tests := []struct {
		name  string
		ca    bool
		major int
	}{{"pg15", false, 15}, {"pg16 with a CA", true, 16}, {"pg17", false, 17}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := testDatabase("app")
			in := testRestoreInput(tt.ca, tt.major)
			job := RestoreJob(db, in)
			if job.Name != "app-restore" || job.Namespace != "team-a" {
				t.Fatalf("name %s/%s", job.Namespace, job.Name)
			}
			if o := metav1.GetControllerOf(job); o == nil || o.Kind != "PostgresDatabase" || o.Name != "app" {
				t.Fatalf("controller %+v", o)
			}
			checkToolJob(t, job, in.OperatorImage, ContainerRestore, PostgresImage("docker.io/library/postgres:%d", tt.major))
			pod := job.Spec.Template.Spec
			c := pod.Containers[0]
			want := []string{Binary, "backup", "restore", "--store-config", "/etc/backup-store/store.yaml", "--namespace", "team-a",
				"--kind", "PostgresDatabase", "--name", "old-app", "--id", in.ID, "--target-url-env", "DATABASE_URL", "--result-file", "/dev/termination-log"}
			if !slices.Equal(c.Command, want) {
				t.Fatalf("command %q\nwant    %q", c.Command, want)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					t.Fatalf("env %s is not from a Secret", e.Name)
				}
				env[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			}
			if env[DatabaseURLEnv] != "app-restore-credentials/url" || env[AccessKeyIDEnv] != "s3/AWS_ACCESS_KEY_ID" || env[SecretAccessKeyEnv] != "s3/AWS_SECRET_ACCESS_KEY" {
				t.Fatalf("env %v", env)
			}
			vols := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				vols[v.Name] = v
			}
			if vols["store-config"].ConfigMap == nil || vols["store-config"].ConfigMap.Name != "app-restore" {
				t.Fatalf("store-config volume %+v", vols["store-config"])
			}
			if _, ok := vols["store-ca"]; ok != tt.ca {
				t.Fatalf("CA volume %v, want %v", ok, tt.ca)
			}
			cm, err := RestoreConfigMap(db, in)
			if err != nil || cm.Name != "app-restore" || !strings.Contains(cm.Data[StoreConfigKey], `"bucket":"bk"`) ||
				strings.Contains(cm.Data[StoreConfigKey], "secret\":\"") {
				t.Fatalf("config map %v %v", cm.Data, err)
			}
		})
	}
}

// TestRestoreJobOfABouncer: the same Job restores a SojuBouncer's artifact, owned by the bouncer and reading
// the bouncer's own database Secret; only kind, owner and credentials differ.
func TestRestoreJobOfABouncer(t *testing.T) {
	b := &ircv1.SojuBouncer{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "irc", UID: "u-2"}}
	in := testRestoreInput(false, 15)
	in.Target, in.CredentialsSecret = ircv1.GroupVersion.WithKind("SojuBouncer"), "irc-db"
	job := RestoreJob(b, in)
	if o := metav1.GetControllerOf(job); job.Name != "irc-restore" || o == nil || o.Kind != "SojuBouncer" || o.APIVersion != ircv1.GroupVersion.String() || o.UID != "u-2" {
		t.Fatalf("job %s, controller %+v", job.Name, o)
	}
	checkToolJob(t, job, in.OperatorImage, ContainerRestore, PostgresImage("docker.io/library/postgres:%d", 15))
	c := job.Spec.Template.Spec.Containers[0]
	if i := slices.Index(c.Command, "--kind"); i < 0 || c.Command[i+1] != "SojuBouncer" {
		t.Fatalf("command %q", c.Command)
	}
	for _, e := range c.Env {
		if e.Name == DatabaseURLEnv && (e.ValueFrom.SecretKeyRef.Name != "irc-db" || e.ValueFrom.SecretKeyRef.Key != "url") {
			t.Fatalf("env %+v", e)
		}
	}
	cm, err := RestoreConfigMap(b, in)
	if err != nil || metav1.GetControllerOf(cm).Kind != "SojuBouncer" {
		t.Fatalf("config map %+v %v", cm.ObjectMeta, err)
	}
}

func TestRestoreNames(t *testing.T) {
	for _, name := range []string{"app", strings.Repeat("a", 63), strings.Repeat("a", 54) + "-b"} {
		db := testDatabase(name)
		if n := RestoreName(db); len(n) > 63 || !strings.HasSuffix(n, "-restore") || strings.Contains(n, "--") {
			t.Errorf("RestoreName(%q) = %q", name, n)
		}
		job := RestoreJob(db, testRestoreInput(false, 16))
		job.UID = "job-uid"
		creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-postgres", UID: "x", ResourceVersion: "7"},
			Data: map[string][]byte{"url": []byte("postgresql://u:p@h/d"), "password": []byte("p")}}
		s := RestoreSecret(db, job, creds)
		if s.Name != RestoreSecretName(db) || string(s.Data["url"]) != "postgresql://u:p@h/d" || s.ResourceVersion != "" ||
			metav1.GetControllerOf(s).UID != "job-uid" || !IsRestoreSecret(db, s) {
			t.Errorf("RestoreSecret(%q) = %+v", name, s.ObjectMeta)
		}
		if creds.Name != name+"-postgres" {
			t.Error("RestoreSecret changed its input")
		}
		other := s.DeepCopy()
		other.OwnerReferences[0].Name = "someone-else"
		if IsRestoreSecret(db, other) {
			t.Error("a Secret controlled by another Job is taken for the restore's")
		}
	}
}
