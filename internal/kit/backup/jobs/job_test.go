package jobs

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
)

func testBackup() *backupv1.Backup {
	return &backupv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "nightly", UID: "0a1b2c3d-4e5f-6789-abcd-ef0123456789",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 28, 16, 5, 9, 0, time.FixedZone("CET", 3600)))},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "app"}, Store: "main"},
	}
}

func testStore(ca bool) *backupv1.BackupStore {
	s := &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "main"},
		Spec: backupv1.BackupStoreSpec{Endpoint: "https://s3.example", Bucket: "bk", Prefix: "prod", Region: "eu-1",
			Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"},
			Encryption:  &backupv1.BackupStoreEncryption{Mode: backupv1.EncryptionSSES3}}}
	if ca {
		s.Spec.CABundle = &backupv1.BackupStoreCA{ConfigMapName: "store-ca", Key: "bundle.pem"}
	}
	return s
}

func testInput(ca bool, major int) Input {
	return Input{Store: testStore(ca), AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY",
		CAKey: "bundle.pem", SourceSecret: "app-postgres", ID: ID(testBackup()),
		OperatorImage: "registry.test/platform-operator:v1", PostgresImage: PostgresImage("docker.io/library/postgres:%d", major)}
}

func TestID(t *testing.T) {
	if got, want := ID(testBackup()), "20261128T150509Z-0a1b2c3d"; got != want {
		t.Fatalf("ID = %q, want %q (UTC time, then the uid's first 8)", got, want)
	}
}

func TestName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"nightly", "nightly-backup"},
		{strings.Repeat("a", 60), strings.Repeat("a", 56) + "-backup"},
		{strings.Repeat("a", 55) + "-b", strings.Repeat("a", 55) + "-backup"},
	}
	for _, tt := range tests {
		b := testBackup()
		b.Name = tt.name
		if got := Name(b); got != tt.want || len(got) > 63 {
			t.Errorf("Name(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestJobImage: the main container is the postgres image of the server's major version (pg_dump refuses
// a server newer than itself), the init container the operator's.
func TestJobImage(t *testing.T) {
	for _, major := range []int{15, 16, 17} {
		job := Job(testBackup(), testInput(false, major))
		want := "docker.io/library/postgres:" + map[int]string{15: "15", 16: "16", 17: "17"}[major]
		if got := job.Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("server %d: image %q, want %q", major, got, want)
		}
		if got := job.Spec.Template.Spec.InitContainers[0].Image; got != "registry.test/platform-operator:v1" {
			t.Errorf("init image %q", got)
		}
	}
}

func TestJobSecurity(t *testing.T) {
	job := Job(testBackup(), testInput(true, 16))
	pod := job.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token")
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext is not restricted: %+v", sc)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
			!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container %s securityContext is not restricted: %+v", c.Name, sc)
		}
		if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("container %s: terminationMessagePolicy %q", c.Name, c.TerminationMessagePolicy)
		}
		// No credential is ever a literal value: every env var comes from a Secret.
		for _, e := range c.Env {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("container %s: env %s is not from a Secret", c.Name, e.Name)
			}
		}
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("the Job retries: a retry would put the same id again")
	}
	ref := job.OwnerReferences
	if len(ref) != 1 || ref[0].Kind != "Backup" || ref[0].Name != "nightly" || ref[0].Controller == nil || !*ref[0].Controller {
		t.Errorf("owner references %+v", ref)
	}
	if job.Namespace != "team-a" {
		t.Errorf("namespace %q", job.Namespace)
	}
}

func TestJobCommandAndEnv(t *testing.T) {
	b := testBackup()
	in := testInput(true, 16)
	in.ToolVersion = "pg_dump (PostgreSQL) 16"
	job := Job(b, in)
	c := job.Spec.Template.Spec.Containers[0]
	want := []string{"/shared/platform-operator", "backup", "put", "--store-config", "/etc/backup-store/store.yaml",
		"--namespace", "team-a", "--kind", "PostgresDatabase", "--name", "app", "--id", "20261128T150509Z-0a1b2c3d",
		"--format", "pg_dump-custom", "--tool-version", "pg_dump (PostgreSQL) 16", "--pg-facts-url-env", "DATABASE_URL",
		"--", "pg_dump", "-Fc", "--no-owner", "--no-privileges", "-d", "$(DATABASE_URL)"}
	if !slices.Equal(c.Command, want) {
		t.Errorf("command\n got %q\nwant %q", c.Command, want)
	}
	env := map[string]corev1.SecretKeySelector{}
	for _, e := range c.Env {
		env[e.Name] = *e.ValueFrom.SecretKeyRef
	}
	for name, want := range map[string][2]string{DatabaseURLEnv: {"app-postgres", "url"},
		AccessKeyIDEnv: {"s3", "AWS_ACCESS_KEY_ID"}, SecretAccessKeyEnv: {"s3", "AWS_SECRET_ACCESS_KEY"}} {
		if got := env[name]; got.Name != want[0] || got.Key != want[1] {
			t.Errorf("env %s from %s/%s, want %s/%s", name, got.Name, got.Key, want[0], want[1])
		}
	}
	init := job.Spec.Template.Spec.InitContainers[0]
	if !slices.Equal(init.Command, []string{"/manager", "backup", "copy-binary", "/shared/platform-operator"}) {
		t.Errorf("init command %q", init.Command)
	}
	// The CA is mounted from the store's ConfigMap key, at the file the store config names.
	var ca *corev1.Volume
	for i, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == "store-ca" {
			ca = &job.Spec.Template.Spec.Volumes[i]
		}
	}
	if ca == nil || ca.ConfigMap.Name != "store-ca" || ca.ConfigMap.Items[0].Key != "bundle.pem" || ca.ConfigMap.Items[0].Path != CAFile {
		t.Errorf("CA volume %+v", ca)
	}
	// Without a CA, no CA volume.
	for _, v := range Job(b, testInput(false, 16)).Spec.Template.Spec.Volumes {
		if v.Name == "store-ca" {
			t.Error("a CA volume without spec.caBundle")
		}
	}
}

func TestStoreConfigMap(t *testing.T) {
	cm, err := StoreConfigMap(testBackup(), testInput(true, 16))
	if err != nil {
		t.Fatal(err)
	}
	var f backup.StoreFile
	if err := json.Unmarshal([]byte(cm.Data[StoreConfigKey]), &f); err != nil {
		t.Fatal(err)
	}
	want := backup.StoreFile{Endpoint: "https://s3.example", Bucket: "bk", Prefix: "prod", Region: "eu-1",
		Credentials:  backup.CredentialSources{AccessKeyIDEnv: AccessKeyIDEnv, SecretAccessKeyEnv: SecretAccessKeyEnv},
		CABundleFile: "/etc/backup-store-ca/ca.crt"}
	if f.Endpoint != want.Endpoint || f.Bucket != want.Bucket || f.Prefix != want.Prefix || f.Region != want.Region ||
		f.Credentials != want.Credentials || f.CABundleFile != want.CABundleFile || f.Encryption == nil || f.Encryption.Mode != "SSE-S3" {
		t.Errorf("store file %+v", f)
	}
	if cm.Name != "nightly-backup" || cm.OwnerReferences[0].Name != "nightly" {
		t.Errorf("metadata %+v", cm.ObjectMeta)
	}
}
