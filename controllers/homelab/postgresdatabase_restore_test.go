package homelab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/postgres"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
)

// The restore Job's init container image; envtest has no kubelet, so it never runs.
const testOperatorImage = "registry.test/platform-operator:test"

func init() {
	suiteOptionHooks = append(suiteOptionHooks, func(o *Options) {
		o.OperatorImage, o.RestorePostgresImage = testOperatorImage, "docker.io/library/postgres:%d"
	})
}

// operatorBinary is the operator's binary ($OPERATOR_BINARY, else built once): the program the Jobs run.
func operatorBinary() string {
	GinkgoHelper()
	bin, err := jobrun.OperatorBinary()
	Expect(err).NotTo(HaveOccurred())
	return bin
}

// readyBackupStore makes a BackupStore "main" in ns on a new bucket of the suite's S3 server and gives it,
// through the status subresource, the Ready the backup group's controller (not run here) would.
func readyBackupStore(ctx context.Context, ns string) *backupv1.BackupStore {
	GinkgoHelper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	bucket := "rs-" + hex.EncodeToString(b)
	_, err := s3.CreateBucket(ctx, bucket, "")
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3.SecretAccessKey}})).To(Succeed())
	store := &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main"},
		Spec: backupv1.BackupStoreSpec{Endpoint: s3.Endpoint, Bucket: bucket, Prefix: "prod", Region: "us-east-1",
			Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"}}}
	Expect(k8s.Create(ctx, store)).To(Succeed())
	store.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: backupv1.ReasonReachable,
		Message: "test", LastTransitionTime: metav1.Now(), ObservedGeneration: store.Generation}}
	Expect(k8s.Status().Update(ctx, store)).To(Succeed())
	return store
}

// storeEnv is the store file (the one a Job gets) written to dir, and the env with the store's keys.
func storeEnv(store *backupv1.BackupStore, dir string) (string, []string) {
	GinkgoHelper()
	doc, err := json.Marshal(jobs.StoreFile(store))
	Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(dir, jobs.StoreConfigKey)
	Expect(os.WriteFile(file, doc, 0o600)).To(Succeed())
	pgBin, err := postgrestest.BinDir()
	Expect(err).NotTo(HaveOccurred())
	return file, []string{"PATH=" + pgBin + ":/usr/bin:/bin", jobs.AccessKeyIDEnv + "=" + s3.AccessKeyID, jobs.SecretAccessKeyEnv + "=" + s3.SecretAccessKey}
}

// putBackup dumps db (through its Secret's url) with the operator's `backup put -- pg_dump` to store as
// artifact id, and makes a Backup of it with the status the backup group would give it (phase, or
// Completed with the id).
func putBackup(ctx context.Context, store *backupv1.BackupStore, db *homelabv1.PostgresDatabase, name, id string) *backupv1.Backup {
	GinkgoHelper()
	file, env := storeEnv(store, GinkgoT().TempDir())
	url := string(secretOf(db).Data["url"])
	cmd := exec.CommandContext(ctx, operatorBinary(), "backup", "put", "--store-config", file, "--namespace", db.Namespace,
		"--kind", "PostgresDatabase", "--name", db.Name, "--id", id, "--", "pg_dump", "-Fc", "--no-owner", "--no-privileges", "-d", url)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return makeBackup(ctx, db.Namespace, name, backupv1.SourcePostgresDatabase, db.Name, backupv1.BackupCompleted, id)
}

// putArtifact dumps db to store as the artifact id of a source of kind with db's name, with no Backup
// object: what a store form of spec.restore names.
func putArtifact(ctx context.Context, store *backupv1.BackupStore, db *homelabv1.PostgresDatabase, kind, id string) {
	GinkgoHelper()
	file, env := storeEnv(store, GinkgoT().TempDir())
	url := string(secretOf(db).Data["url"])
	cmd := exec.CommandContext(ctx, operatorBinary(), "backup", "put", "--store-config", file, "--namespace", db.Namespace,
		"--kind", kind, "--name", db.Name, "--id", id, "--", "pg_dump", "-Fc", "--no-owner", "--no-privileges", "-d", url)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}

// makeBackup makes a Backup with the status the backup group's controller would give it.
func makeBackup(ctx context.Context, ns, name string, kind backupv1.SourceKind, source string, phase backupv1.BackupPhase, id string) *backupv1.Backup {
	GinkgoHelper()
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: kind, Name: source}, Store: "main"}}
	Expect(k8s.Create(ctx, b)).To(Succeed())
	b.Status.Phase, b.Status.ID = phase, id
	Expect(k8s.Status().Update(ctx, b)).To(Succeed())
	return b
}

// restoreJob waits for db's restore Job.
func restoreJob(ctx context.Context, db *homelabv1.PostgresDatabase) *batchv1.Job {
	GinkgoHelper()
	job := &batchv1.Job{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: jobs.RestoreName(db)}, job)
	}).Should(Succeed())
	return job
}

// runRestoreLocally runs the restore Job's main container command on this machine, as the kubelet would
// (jobrun): the operator's binary, the machine's pg_restore. It returns the exit code and the output.
func runRestoreLocally(ctx context.Context, job *batchv1.Job) (int, string) {
	GinkgoHelper()
	local, err := jobrun.WithPostgres(k8s, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	r, err := local.Run(ctx, job)
	Expect(err).NotTo(HaveOccurred())
	return r.ExitCode, r.Output
}

// finishRestoreJob marks the Job succeeded or failed through the status subresource, as the Job
// controller would.
func finishRestoreJob(ctx context.Context, job *batchv1.Job, succeeded bool) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j := &batchv1.Job{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
			return err
		}
		now := metav1.Now()
		start := metav1.NewTime(now.Add(-time.Minute))
		j.Status.StartTime = &start
		cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
			return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: now, LastTransitionTime: now}
		}
		if succeeded {
			j.Status.Succeeded = 1
			j.Status.CompletionTime = &now
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached),
				cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached)}
		} else {
			j.Status.Failed = 1
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded),
				cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)}
		}
		return k8s.Status().Update(ctx, j)
	})).To(Succeed())
}

// writeRows fills db (as its own role) with a table of n rows whose text starts with tag.
func writeRows(ctx context.Context, db *homelabv1.PostgresDatabase, tag string, n int) {
	GinkgoHelper()
	conn, err := pgx.Connect(ctx, string(secretOf(db).Data["url"]))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE notes (id int PRIMARY KEY, body text);
		INSERT INTO notes SELECT g, '%s ' || md5(g::text) FROM generate_series(1, %d) g;
		CREATE SCHEMA shop; CREATE TABLE shop.items (id bigserial PRIMARY KEY, price numeric);
		INSERT INTO shop.items (price) SELECT g * 1.5 FROM generate_series(1, 40) g`, tag, n))
	Expect(err).NotTo(HaveOccurred())
}

// rowsOf is count and md5 of every row of db's tables (read as the database's role through url), and the
// owners of its tables.
func rowsOf(ctx context.Context, url string) (string, []string) {
	GinkgoHelper()
	conn, err := pgx.Connect(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	var digest string
	Expect(conn.QueryRow(ctx, `SELECT (SELECT count(*) || ':' || md5(string_agg(n::text, ',' ORDER BY n.id)) FROM notes n) || '/' ||
		(SELECT count(*) || ':' || md5(string_agg(i::text, ',' ORDER BY i.id)) FROM shop.items i)`).Scan(&digest)).To(Succeed())
	rows, err := conn.Query(ctx, `SELECT DISTINCT pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname IN ('public', 'shop') AND c.relkind IN ('r', 'S', 'i')`)
	Expect(err).NotTo(HaveOccurred())
	owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
	Expect(err).NotTo(HaveOccurred())
	return digest, owners
}

// restoring is a PostgresDatabase ns/name on connection "main" restored from src.
func restoring(ns, name string, src homelabv1.RestoreSource) *homelabv1.PostgresDatabase {
	GinkgoHelper()
	return newDatabase(ns, name, "main", func(db *homelabv1.PostgresDatabase) { db.Spec.Restore = &src })
}

// noWorkloadSecret says db's Secret <name>-postgres does not exist.
func noWorkloadSecret(ctx context.Context, db *homelabv1.PostgresDatabase) {
	GinkgoHelper()
	err := k8s.Get(ctx, types.NamespacedName{Namespace: db.Namespace, Name: postgres.SecretName(db.Name)}, &corev1.Secret{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the workload's Secret exists before the restore succeeded: %v", err)
}

var _ = Describe("PostgresDatabase restore", func() {
	It("restores a deleted database's backup into a new one, hands over the Secret only then, row by row and owned by its role", func(ctx SpecContext) {
		ns := newNamespace("pgrestore")
		readyConnection(ns, "main")
		store := readyBackupStore(ctx, ns)
		a := readyDatabase(newDatabase(ns, "a", "main"))
		writeRows(ctx, a, "from-a", 700)
		other := readyDatabase(newDatabase(ns, "other", "main"))
		writeRows(ctx, other, "from-other", 300)
		wantA, _ := rowsOf(ctx, string(secretOf(a).Data["url"]))
		wantOther, _ := rowsOf(ctx, string(secretOf(other).Data["url"]))
		Expect(wantA).NotTo(Equal(wantOther))
		putBackup(ctx, store, a, "a-nightly", "20261128T150000Z-aaaaaaaa")
		putBackup(ctx, store, other, "other-nightly", "20261128T150000Z-bbbbbbbb")
		Expect(k8s.Delete(ctx, a)).To(Succeed())
		expectGone(a)

		b := restoring(ns, "b", homelabv1.RestoreSource{Backup: "a-nightly"})
		expectCondition(b, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonRestoring)
		job := restoreJob(ctx, b)
		Expect(metav1.IsControlledBy(job, b)).To(BeTrue())
		Expect(job.Spec.Template.Spec.Containers[0].Image).To(HavePrefix("docker.io/library/postgres:"))
		Expect(job.Spec.Template.Spec.Containers[0].Command).To(ContainElements("restore", "--target-url-env", "DATABASE_URL"))
		creds := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.RestoreSecretName(b)}, creds)).To(Succeed())
		Expect(metav1.GetControllerOf(creds).UID).To(Equal(job.UID), "the credentials Secret goes with the Job")
		noWorkloadSecret(ctx, b)
		Expect(condOf(b, homelabv1.ConditionReady).Status).NotTo(Equal(metav1.ConditionTrue))

		code, out := runRestoreLocally(ctx, job)
		Expect(code).To(Equal(0), out)
		Expect(out).NotTo(ContainSubstring(string(creds.Data["password"])))
		noWorkloadSecret(ctx, b) // the Job's end decides, not the data arriving
		finishRestoreJob(ctx, job, true)

		b = readyDatabase(b)
		Expect(condOf(b, homelabv1.ConditionRestored).Reason).To(Equal(homelabv1.ReasonRestored))
		Expect(b.Status.RestoredFrom).NotTo(BeNil())
		Expect(*b.Status.RestoredFrom).To(HaveField("Backup", "a-nightly"))
		Expect(b.Status.RestoredFrom.ID).To(Equal("20261128T150000Z-aaaaaaaa"))
		Expect(b.Status.RestoredFrom.SourceName).To(Equal("a"))
		secret := secretOf(b)
		got, owners := rowsOf(ctx, string(secret.Data["url"]))
		Expect(got).To(Equal(wantA))
		Expect(got).NotTo(Equal(wantOther))
		Expect(owners).To(Equal([]string{b.Status.DatabaseName}), "every restored object is owned by the database's role")
		Expect(string(creds.Data["password"])).To(Equal(string(secret.Data["password"])), "the restore ran as the role the Secret names")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}))
		}).Should(BeTrue(), "the restore Job (and with it its credentials Secret) is deleted once restored")

		// The control: a restore of the other object's artifact, named by store, source and id, gives the
		// other rows.
		c := restoring(ns, "c", homelabv1.RestoreSource{Store: "main", SourceName: "other", ID: "20261128T150000Z-bbbbbbbb"})
		cJob := restoreJob(ctx, c)
		code, out = runRestoreLocally(ctx, cJob)
		Expect(code).To(Equal(0), out)
		finishRestoreJob(ctx, cJob, true)
		c = readyDatabase(c)
		Expect(c.Status.RestoredFrom.Backup).To(BeEmpty())
		got, _ = rowsOf(ctx, string(secretOf(c).Data["url"]))
		Expect(got).To(Equal(wantOther))

		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(cJob), &batchv1.Job{}))
		}).Should(BeTrue())
		Expect(c.Status.RestoredFrom.Time.Time).To(BeTemporally("~", time.Now(), time.Minute))

		// A restored database re-reconciled unchanged writes nothing (the Job is gone, the status holds).
		before := writes.In(ns)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		b.Annotations = map[string]string{"example.com/touch": "1"}
		Expect(k8s.Update(ctx, b)).To(Succeed())
		Consistently(func() []string { return writes.Since(ns, before) }).WithTimeout(2 * time.Second).Should(BeEmpty())

		// spec.restore cannot change, nor be removed or added.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		b.Spec.Restore.Backup = "other-nightly"
		Expect(k8s.Update(ctx, b)).NotTo(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		b.Spec.Restore = nil
		Expect(k8s.Update(ctx, b)).NotTo(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
		other.Spec.Restore = &homelabv1.RestoreSource{Backup: "a-nightly"}
		Expect(k8s.Update(ctx, other)).NotTo(Succeed())
	})

	It("refuses another kind's Backup, waits for one not Completed, and never names another namespace", func(ctx SpecContext) {
		ns := newNamespace("pgrestore")
		readyConnection(ns, "main")
		readyBackupStore(ctx, ns)
		makeBackup(ctx, ns, "bouncer", backupv1.SourceSojuBouncer, "irc", backupv1.BackupCompleted, "20261128T150000Z-cccccccc")
		makeBackup(ctx, ns, "running", backupv1.SourcePostgresDatabase, "x", backupv1.BackupRunning, "20261128T150000Z-dddddddd")

		wrong := restoring(ns, "wrong", homelabv1.RestoreSource{Backup: "bouncer"})
		expectCondition(wrong, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonWrongKind)
		waiting := restoring(ns, "waiting", homelabv1.RestoreSource{Backup: "running"})
		expectCondition(waiting, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonBackupNotCompleted)
		missing := restoring(ns, "missing", homelabv1.RestoreSource{Backup: "nope"})
		expectCondition(missing, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonBackupNotFound)
		for _, db := range []*homelabv1.PostgresDatabase{wrong, waiting, missing} {
			Expect(condOf(db, homelabv1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
			noWorkloadSecret(ctx, db)
			err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.RestoreName(db)}, &batchv1.Job{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a restore that cannot start made a Job")
		}

		// Once its Backup is Completed (the Backup's change wakes it), the store is looked into before any
		// Job: its artifact does not exist (never written here, as one pruned), so the restore ends
		// BackupNotFound naming the id, with no Job, no Secret, not Ready.
		b := &backupv1.Backup{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "running"}, b)).To(Succeed())
		b.Status.Phase = backupv1.BackupCompleted
		Expect(k8s.Status().Update(ctx, b)).To(Succeed())
		Eventually(func() string { return condOf(waiting, homelabv1.ConditionRestored).Message }).
			Should(ContainSubstring("20261128T150000Z-dddddddd"))
		c := expectCondition(waiting, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonBackupNotFound)
		Expect(c.Message).To(ContainSubstring(`Backup "running"`))
		Expect(condOf(waiting, homelabv1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		noWorkloadSecret(ctx, waiting)
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.RestoreName(waiting)}, &batchv1.Job{}))
		}).WithTimeout(2*time.Second).Should(BeTrue(), "a restore of an artifact the store does not hold made a Job")

		// Another namespace's Backup or store cannot be named: a name is a name.
		for _, src := range []homelabv1.RestoreSource{{Backup: "other-ns/a-nightly"}, {Store: "other-ns/main", SourceName: "a", ID: "1"}} {
			db := homelabTestDatabase(ns, "cross", src)
			err := k8s.Create(ctx, db)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%+v: %v", src, err)
		}
	})

	It("never restores into a database that already holds tables (one kept by Retain and taken up again)", func(ctx SpecContext) {
		ns := newNamespace("pgrestore")
		readyConnection(ns, "main")
		store := readyBackupStore(ctx, ns)
		src := readyDatabase(newDatabase(ns, "src", "main"))
		writeRows(ctx, src, "src", 10)
		putBackup(ctx, store, src, "src-nightly", "20261128T150000Z-eeeeeeee")

		kept := readyDatabase(newDatabase(ns, "kept", "main", func(db *homelabv1.PostgresDatabase) {
			db.Spec.ReclaimPolicy = homelabv1.DatabaseReclaimRetain
		}))
		writeRows(ctx, kept, "kept", 5)
		url := string(secretOf(kept).Data["url"])
		before, _ := rowsOf(ctx, url)
		Expect(k8s.Delete(ctx, kept)).To(Succeed())
		expectGone(kept)
		// envtest has no garbage collector: remove the old object's Secret as it would.
		Expect(k8s.Delete(ctx, secretOf(kept))).To(Succeed())

		again := restoring(ns, "kept", homelabv1.RestoreSource{Backup: "src-nightly"})
		c := expectCondition(again, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonTargetNotEmpty)
		Expect(c.Message).To(ContainSubstring("never writes into a database with content"))
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.RestoreName(again)}, &batchv1.Job{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		noWorkloadSecret(ctx, again)
		// Untouched: read as the superuser (the role's password may have been made anew).
		superURL := fmt.Sprintf("postgresql://%s:%s@%s:%d/%s?sslmode=disable", pg.User, pg.Password, pg.Host, pg.Port, again.Status.DatabaseName)
		after, _ := rowsOf(ctx, superURL)
		Expect(after).To(Equal(before))
		Expect(strings.HasPrefix(after, "5:")).To(BeTrue())
	})

	It("looks into the store before any Job: a missing id is BackupNotFound naming it, another kind's artifact WrongKind, a store that does not answer a wait", func(ctx SpecContext) {
		ns := newNamespace("pgrestore-pre")
		readyConnection(ns, "main")
		store := readyBackupStore(ctx, ns)
		src := readyDatabase(newDatabase(ns, "src", "main"))
		writeRows(ctx, src, "src", 20)
		want, _ := rowsOf(ctx, string(secretOf(src).Data["url"]))
		putBackup(ctx, store, src, "src-nightly", "20261128T150000Z-11111111")
		// The same source name and id written as another kind's artifact (a SojuBouncer "bnc").
		bnc := readyDatabase(newDatabase(ns, "bnc", "main"))
		putArtifact(ctx, store, bnc, "SojuBouncer", "20261128T150000Z-22222222")

		noJob := func(db *homelabv1.PostgresDatabase) {
			GinkgoHelper()
			Expect(condOf(db, homelabv1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
			noWorkloadSecret(ctx, db)
			Consistently(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.RestoreName(db)}, &batchv1.Job{}))
			}).WithTimeout(2*time.Second).Should(BeTrue(), "a refused restore made a Job")
		}

		missing := restoring(ns, "missing", homelabv1.RestoreSource{Store: "main", SourceName: "src", ID: "20261128T150000Z-99999999"})
		c := expectCondition(missing, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonBackupNotFound)
		Expect(c.Message).To(ContainSubstring("20261128T150000Z-99999999"))
		Expect(c.Message).To(ContainSubstring(`BackupStore "main"`))
		noJob(missing)

		wrong := restoring(ns, "wrong", homelabv1.RestoreSource{Store: "main", SourceName: "bnc", ID: "20261128T150000Z-22222222"})
		c = expectCondition(wrong, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonWrongKind)
		Expect(c.Message).To(ContainSubstring("SojuBouncer"))
		noJob(wrong)

		// A store whose endpoint does not answer (Ready as last seen): the restore waits, names no credential.
		Expect(k8s.Create(ctx, &backupv1.BackupStore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "down"},
			Spec: backupv1.BackupStoreSpec{Endpoint: "http://127.0.0.1:1", Bucket: store.Spec.Bucket, Prefix: "prod", Region: "us-east-1",
				Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"}}})).To(Succeed())
		down := &backupv1.BackupStore{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "down"}, down)).To(Succeed())
		down.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: backupv1.ReasonReachable,
			Message: "test", LastTransitionTime: metav1.Now(), ObservedGeneration: down.Generation}}
		Expect(k8s.Status().Update(ctx, down)).To(Succeed())
		waits := restoring(ns, "waits", homelabv1.RestoreSource{Store: "down", SourceName: "src", ID: "20261128T150000Z-11111111"})
		c = expectCondition(waits, homelabv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonStoreNotReady)
		Expect(c.Message).To(ContainSubstring(`BackupStore "down" could not be read`))
		Expect(c.Message).NotTo(ContainSubstring(s3.SecretAccessKey))
		Expect(c.Message).NotTo(ContainSubstring(s3.AccessKeyID))
		noJob(waits)

		// The control: the same store form with the id the store holds restores, row by row.
		ok := restoring(ns, "ok", homelabv1.RestoreSource{Store: "main", SourceName: "src", ID: "20261128T150000Z-11111111"})
		expectCondition(ok, homelabv1.ConditionRestored, metav1.ConditionFalse, homelabv1.ReasonRestoring)
		job := restoreJob(ctx, ok)
		code, out := runRestoreLocally(ctx, job)
		Expect(code).To(Equal(0), out)
		finishRestoreJob(ctx, job, true)
		ok = readyDatabase(ok)
		got, _ := rowsOf(ctx, string(secretOf(ok).Data["url"]))
		Expect(got).To(Equal(want))
	})
})

// condOf is db's condition t as the API server holds it (never nil: a missing one fails).
func condOf(db *homelabv1.PostgresDatabase, t string) metav1.Condition {
	GinkgoHelper()
	Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(db), db)).To(Succeed())
	for _, c := range db.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	Fail("no condition " + t)
	return metav1.Condition{}
}

// homelabTestDatabase is a PostgresDatabase ns/name on "main" with spec.restore src, not created.
func homelabTestDatabase(ns, name string, src homelabv1.RestoreSource) *homelabv1.PostgresDatabase {
	return &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.PostgresDatabaseSpec{Connection: "main", Restore: &src}}
}
