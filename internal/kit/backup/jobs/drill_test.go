package jobs

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
)

func testDrillInput(ca bool, major int) DrillInput {
	return DrillInput{Store: testStore(ca), AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY",
		CAKey: "bundle.pem", ScratchSecret: "nightly-drill-postgres",
		OperatorImage: "registry.test/platform-operator:v1", PostgresImage: PostgresImage("docker.io/library/postgres:%d", major)}
}

func completedBackup() *backupv1.Backup {
	b := testBackup()
	b.Spec.Verify = true
	b.Status.ID, b.Status.Phase, b.Status.ToolVersion = ID(b), backupv1.BackupCompleted, "pg_dump (PostgreSQL) 16"
	return b
}

func TestDrillName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct{ name, want string }{
		{"nightly", "nightly-drill"},
		{strings.Repeat("a", 57), strings.Repeat("a", 57) + "-drill"},
		{long, ""}, // hashed: checked below
	}
	seen := map[string]string{}
	for _, tt := range append(tests, struct{ name, want string }{long + "b", ""}, struct{ name, want string }{strings.Repeat("a", 44) + "-" + strings.Repeat("c", 30), ""}) {
		b := testBackup()
		b.Name = tt.name
		got := DrillName(b)
		if tt.want != "" && got != tt.want {
			t.Errorf("DrillName(%q) = %q, want %q", tt.name, got, tt.want)
		}
		if len(got) > 63 || !strings.HasSuffix(got, "-drill") || strings.Contains(got, "--") || strings.Contains(got, ".-") {
			t.Errorf("DrillName(%q) = %q: not a valid, suffixed name within 63", tt.name, got)
		}
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("DrillName(%q) = %q: %v", tt.name, got, errs)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("DrillName(%q) = DrillName(%q) = %q", tt.name, other, got)
		}
		seen[got] = tt.name
		if DrillName(b) != got {
			t.Errorf("DrillName(%q) is not deterministic", tt.name)
		}
	}
}

// TestScratchDatabase: on the source's connection, dropped on deletion, controlled by the Backup, labelled.
func TestScratchDatabase(t *testing.T) {
	b := completedBackup()
	src := &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"},
		Spec: homelabv1.PostgresDatabaseSpec{Connection: "shared/pg-main", ReclaimPolicy: homelabv1.DatabaseReclaimRetain, DatabaseName: "app_db"}}
	db := ScratchDatabase(b, src)
	if db.Name != "nightly-drill" || db.Namespace != "team-a" || db.Kind != "PostgresDatabase" || db.APIVersion != "homelab.mortenolsen.pro/v1" {
		t.Fatalf("identity %s %s/%s", db.GroupVersionKind(), db.Namespace, db.Name)
	}
	if db.Spec.Connection != "shared/pg-main" || db.Spec.ReclaimPolicy != homelabv1.DatabaseReclaimDelete || db.Spec.DatabaseName != "" || db.Spec.Restore != nil {
		t.Fatalf("spec %+v: want the source's connection, Delete, a derived name and no restore", db.Spec)
	}
	if o := metav1.GetControllerOf(db); o == nil || o.Kind != "Backup" || o.Name != "nightly" || o.UID != b.UID {
		t.Fatalf("controller %+v", o)
	}
	want := map[string]string{backupv1.LabelDrillOf: "nightly", backupv1.LabelSourceKind: "PostgresDatabase", backupv1.LabelSourceName: "app",
		"app.kubernetes.io/managed-by": "platform-operator", "app.kubernetes.io/name": "drill", "app.kubernetes.io/instance": "nightly"}
	for k, v := range want {
		if db.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, db.Labels[k], v)
		}
	}
}

// TestDrillJob: the backup Job's pod with the verify command, the scratch database's Secret and a deadline.
func TestDrillJob(t *testing.T) {
	tests := []struct {
		name  string
		ca    bool
		major int
	}{{"pg15", false, 15}, {"pg16 with a CA", true, 16}, {"pg17", false, 17}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := completedBackup()
			in := testDrillInput(tt.ca, tt.major)
			job := DrillJob(b, in)
			if job.Name != "nightly-drill" || job.Namespace != "team-a" || job.Labels[backupv1.LabelDrillOf] != "nightly" {
				t.Fatalf("metadata %+v", job.ObjectMeta)
			}
			if o := metav1.GetControllerOf(job); o == nil || o.Kind != "Backup" || o.Name != "nightly" {
				t.Fatalf("controller %+v", o)
			}
			if job.Spec.ActiveDeadlineSeconds != nil {
				t.Fatal("the drill Job's deadline is the controller's (--backup-job-deadline), not the builder's")
			}
			checkToolJob(t, job, in.OperatorImage, ContainerDrill, PostgresImage("docker.io/library/postgres:%d", tt.major))
			pod := job.Spec.Template.Spec
			c := pod.Containers[0]
			want := []string{Binary, "backup", "verify", "--store-config", "/etc/backup-store/store.yaml", "--namespace", "team-a",
				"--kind", "PostgresDatabase", "--name", "app", "--id", "20261128T150509Z-0a1b2c3d",
				"--scratch-url-env", "DATABASE_URL", "--result-file", "/dev/termination-log"}
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
			if env[DatabaseURLEnv] != "nightly-drill-postgres/url" || env[AccessKeyIDEnv] != "s3/AWS_ACCESS_KEY_ID" || env[SecretAccessKeyEnv] != "s3/AWS_SECRET_ACCESS_KEY" {
				t.Fatalf("env %v", env)
			}
			vols := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				vols[v.Name] = v
			}
			// The Backup's own store ConfigMap (applied again from the store before the drill).
			if vols["store-config"].ConfigMap == nil || vols["store-config"].ConfigMap.Name != Name(b) {
				t.Fatalf("store-config volume %+v", vols["store-config"])
			}
			if _, ok := vols["store-ca"]; ok != tt.ca {
				t.Fatalf("CA volume %v, want %v", ok, tt.ca)
			}
		})
	}
}

func TestDrillMajor(t *testing.T) {
	tests := []struct {
		server int
		tool   string
		want   int
	}{
		{15, "pg_dump (PostgreSQL) 15", 15},
		{16, "pg_dump (PostgreSQL) 15", 16},   // a server upgraded since: the newer pg_restore reads the older dump
		{15, "pg_dump (PostgreSQL) 17.2", 17}, // pg_restore must be as new as the pg_dump that wrote it
		{16, "", 16},
		{16, "something else", 16},
	}
	for _, tt := range tests {
		if got := DrillMajor(tt.server, tt.tool); got != tt.want {
			t.Errorf("DrillMajor(%d, %q) = %d, want %d", tt.server, tt.tool, got, tt.want)
		}
	}
}

func TestParseResult(t *testing.T) {
	tests := []struct {
		name, msg string
		ok        bool
		want      backup.VerifyResult
	}{
		{"verified", `{"result":"Verified","reason":"Verified","recoverySeconds":1.5,"message":"ok"}`, true,
			backup.VerifyResult{Result: "Verified", Reason: "Verified", RecoverySeconds: 1.5, Message: "ok"}},
		{"failed, after log lines", "pg_restore: error\n{\"result\":\"Failed\",\"reason\":\"ChecksumMismatch\",\"message\":\"x\"}\n", true,
			backup.VerifyResult{Result: "Failed", Reason: "ChecksumMismatch", Message: "x"}},
		{"empty", "", false, backup.VerifyResult{}},
		{"log only", "exec /shared/platform-operator: no such file or directory", false, backup.VerifyResult{}},
		{"json without a result", `{"a":1}`, false, backup.VerifyResult{}},
	}
	for _, tt := range tests {
		got, ok := ParseResult(tt.msg)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: ParseResult = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTermination(t *testing.T) {
	pod := func(name string, age int, code int32, msg string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(int64(1000+age), 0)}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerDrill,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg}}}}
		return p
	}
	running := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r", CreationTimestamp: metav1.Unix(2000, 0)},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerDrill}}}}
	tests := []struct {
		name string
		pods []corev1.Pod
		code int32
		msg  string
		ok   bool
	}{
		{"none", nil, 0, "", false},
		{"success is read too", []corev1.Pod{pod("a", 1, 0, "done")}, 0, "done", true},
		{"the newest pod", []corev1.Pod{pod("a", 1, 0, "old"), pod("b", 2, 1, "new")}, 1, "new", true},
		{"still running", []corev1.Pod{running}, 0, "", false},
	}
	for _, tt := range tests {
		code, msg, ok := Termination(tt.pods, ContainerDrill)
		if code != tt.code || msg != tt.msg || ok != tt.ok {
			t.Errorf("%s: Termination = %d %q %v", tt.name, code, msg, ok)
		}
	}
	if _, _, ok := Termination([]corev1.Pod{pod("a", 1, 0, "x")}, ContainerBackup); ok {
		t.Error("another container's termination was taken")
	}
}

// TestDatastoreDrillJob: one container in the operator's image running verify without a scratch database,
// no database credential, the store's keys from its Secret, TMPDIR on an emptyDir, restricted.
func TestDatastoreDrillJob(t *testing.T) {
	for _, ca := range []bool{false, true} {
		b := completedBackup()
		b.Spec.Source = backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: "chat"}
		in := testDrillInput(ca, 0)
		in.ScratchSecret, in.PostgresImage = "", ""
		job := DatastoreDrillJob(b, in)
		if job.Name != "nightly-drill" || metav1.GetControllerOf(job) == nil || metav1.GetControllerOf(job).Name != "nightly" {
			t.Fatalf("metadata %+v", job.ObjectMeta)
		}
		if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || job.Spec.ActiveDeadlineSeconds != nil {
			t.Fatalf("backoffLimit %v, deadline %v: once, bounded by the controller", job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds)
		}
		pod := job.Spec.Template.Spec
		if len(pod.InitContainers) != 0 || len(pod.Containers) != 1 {
			t.Fatalf("containers %d init %d: one, in the operator's image", len(pod.Containers), len(pod.InitContainers))
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Fatal("the drill pod must not mount a service account token")
		}
		c := pod.Containers[0]
		if c.Name != ContainerDrill || c.Image != in.OperatorImage {
			t.Fatalf("container %s image %s", c.Name, c.Image)
		}
		want := []string{OperatorCommand, "backup", "verify", "--store-config", "/etc/backup-store/store.yaml", "--namespace", "team-a",
			"--kind", "ErgoNetwork", "--name", "chat", "--id", b.Status.ID, "--result-file", "/dev/termination-log"}
		if !slices.Equal(c.Command, want) {
			t.Fatalf("command %q\nwant    %q", c.Command, want)
		}
		env := map[string]string{}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				env[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			default:
				env[e.Name] = e.Value
			}
		}
		wantEnv := map[string]string{AccessKeyIDEnv: "s3/AWS_ACCESS_KEY_ID", SecretAccessKeyEnv: "s3/AWS_SECRET_ACCESS_KEY", "TMPDIR": DrillTmpDir}
		if len(env) != len(wantEnv) {
			t.Fatalf("env %v, want %v (no database credential)", env, wantEnv)
		}
		for k, v := range wantEnv {
			if env[k] != v {
				t.Fatalf("env %v, want %v", env, wantEnv)
			}
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Fatalf("security context %+v", sc)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v
		}
		if vols["tmp"].EmptyDir == nil || vols["store-config"].ConfigMap == nil {
			t.Fatalf("volumes %+v", pod.Volumes)
		}
		if _, ok := vols["store-ca"]; ok != ca {
			t.Fatalf("CA volume %v, want %v", ok, ca)
		}
		mounts := map[string]corev1.VolumeMount{}
		for _, m := range c.VolumeMounts {
			mounts[m.Name] = m
		}
		if m := mounts["tmp"]; m.MountPath != DrillTmpDir || m.ReadOnly {
			t.Fatalf("tmp mount %+v: writable at %s", m, DrillTmpDir)
		}
		if _, ok := mounts["shared"]; ok {
			t.Fatal("no shared binary volume: the image is the operator's")
		}
	}
}

// TestScratchConnection: the bouncer's admin Secret, the namespace only, controlled by the scratch
// database (so it goes after it), labelled as the Backup's drill.
func TestScratchConnection(t *testing.T) {
	b := completedBackup()
	b.Spec.Source = backupv1.BackupSource{Kind: backupv1.SourceSojuBouncer, Name: "bnc"}
	db := ScratchDatabaseOn(b, DrillName(b))
	db.UID = "db-uid"
	conn := ScratchConnection(b, db, "soju-admin")
	if conn.Name != "nightly-drill" || conn.Namespace != "team-a" || conn.Spec.Secret != "soju-admin" || len(conn.Spec.AllowedNamespaces) != 0 {
		t.Fatalf("connection %+v", conn)
	}
	o := metav1.GetControllerOf(conn)
	if o == nil || o.Kind != "PostgresDatabase" || o.Name != "nightly-drill" || o.UID != "db-uid" || len(conn.OwnerReferences) != 1 {
		t.Fatalf("owner references %+v: the scratch database alone", conn.OwnerReferences)
	}
	if conn.Labels[backupv1.LabelDrillOf] != "nightly" || conn.Labels[backupv1.LabelSourceKind] != "SojuBouncer" {
		t.Fatalf("labels %v", conn.Labels)
	}
	if db.Spec.Connection != "nightly-drill" || db.Spec.ReclaimPolicy != homelabv1.DatabaseReclaimDelete || metav1.GetControllerOf(db).Name != "nightly" {
		t.Fatalf("scratch database %+v", db)
	}
}
