package backup

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// drillFixture is a namespace with a Ready store, a real source database with rows, and a Backup of it
// with spec.verify that is Completed (its Job run on this machine).
type drillFixture struct {
	ns, bucket string
	b          *backupv1.Backup
}

// completedDrilledBackup makes the fixture; before runs after the source and before the Backup.
func completedDrilledBackup(ctx context.Context, prefix string, before func(ns string)) drillFixture {
	GinkgoHelper()
	ns := newNamespace(prefix)
	bucket := readyStore(ns)
	readyPostgresDatabase(ctx, ns, "app", tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_")))
	if before != nil {
		before(ns)
	}
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "app"},
			Store: "main", Verify: true}}
	Expect(k8s.Create(ctx, b)).To(Succeed())
	job := awaitJob(ctx, b)
	code, out := runJobLocally(ctx, job)
	Expect(code).To(BeZero(), out)
	finishJob(ctx, job, true)
	backupPhase(ctx, b, backupv1.BackupCompleted)
	return drillFixture{ns: ns, bucket: bucket, b: b}
}

// awaitScratch waits for the Backup's scratch PostgresDatabase.
func awaitScratch(ctx context.Context, b *backupv1.Backup) *homelabv1.PostgresDatabase {
	GinkgoHelper()
	db := &homelabv1.PostgresDatabase{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: jobs.DrillName(b)}, db)
	}).Should(Succeed())
	return db
}

// readyScratch does what the homelab controller (not run here) would for the scratch PostgresDatabase: a
// real empty database and its own role on the suite's server, the Secret <name>-postgres with its url, and
// Ready in the status.
func readyScratch(ctx context.Context, db *homelabv1.PostgresDatabase) {
	GinkgoHelper()
	role := strings.ReplaceAll(db.Namespace+"_"+db.Name, "-", "_")
	conn, err := pg.Connect(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE ROLE %q LOGIN PASSWORD 'pw-scratch'`, role))
	Expect(err).NotTo(HaveOccurred())
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q OWNER %q`, role, role))
	Expect(err).NotTo(HaveOccurred())
	url := fmt.Sprintf("postgresql://%s:pw-scratch@%s:%d/%s?sslmode=disable", role, pg.Host, pg.Port, role)
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: db.Namespace, Name: db.Name + "-postgres"},
		StringData: map[string]string{"url": url}})).To(Succeed())
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
			return err
		}
		db.Status.SecretName = db.Name + "-postgres"
		db.Status.DatabaseName = role
		db.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", Message: "test",
			LastTransitionTime: metav1.Now(), ObservedGeneration: db.Generation}}
		return k8s.Status().Update(ctx, db)
	})).To(Succeed())
}

// awaitDrillJob waits for the Backup's drill Job.
func awaitDrillJob(ctx context.Context, b *backupv1.Backup) *batchv1.Job {
	GinkgoHelper()
	job := &batchv1.Job{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: jobs.DrillName(b)}, job)
	}).Should(Succeed())
	return job
}

// runDrill runs the drill Job's command on this machine, gives the Job a pod whose drill container ended
// as the program did, with its result file as the termination message (as the kubelet reports it), and
// marks the Job ended. It returns the exit code, and the result and the output for failure messages.
func runDrill(ctx context.Context, job *batchv1.Job) (int, string) {
	GinkgoHelper()
	code, out, result := runJobCommand(ctx, job)
	endedPod(ctx, job, jobs.ContainerDrill, int32(code), result)
	finishJob(ctx, job, code == 0)
	return code, result + "\n" + out
}

// verificationOf waits until the Backup's drill ended and returns the Backup as read.
func verificationOf(ctx context.Context, b *backupv1.Backup) *backupv1.Backup {
	GinkgoHelper()
	Eventually(func(g Gomega) backupv1.VerificationResult {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		g.Expect(b.Status.Verification).NotTo(BeNil())
		return b.Status.Verification.Result
	}).Should(Or(Equal(backupv1.VerificationVerified), Equal(backupv1.VerificationFailed)))
	return b
}

// gone waits until obj no longer exists.
func gone(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	}).Should(BeTrue(), "%T %s is still there", obj, obj.GetName())
}

// flipData inverts one byte in the middle of the artifact's data, through the S3 API.
func flipData(ctx context.Context, bucket string, ref backup.Ref) {
	GinkgoHelper()
	st, err := objectstore.New(s3.Config(bucket, "prod"))
	Expect(err).NotTo(HaveOccurred())
	key := ref.Namespace + "/" + ref.DataKey()
	rc, err := st.Get(ctx, key)
	Expect(err).NotTo(HaveOccurred())
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	_ = rc.Close()
	Expect(err).NotTo(HaveOccurred())
	data := buf.Bytes()
	data[len(data)/2] ^= 0xff
	Expect(st.PutBytes(ctx, key, data, "")).To(Succeed())
}

var _ = Describe("Restore drills of a PostgresDatabase Backup (spec.verify)", func() {
	It("restores a Completed Backup into a scratch PostgresDatabase on the source's server: Verified, then deletes the scratch and the Job", func(ctx SpecContext) {
		f := completedDrilledBackup(ctx, "drill-ok", nil)
		b := f.b

		By("the scratch PostgresDatabase: the source's connection, Delete, the Backup's, labelled")
		scratch := awaitScratch(ctx, b)
		Expect(scratch.Name).To(Equal("nightly-drill"))
		Expect(scratch.Spec.Connection).To(Equal("main"))
		Expect(scratch.Spec.ReclaimPolicy).To(Equal(homelabv1.DatabaseReclaimDelete))
		owner := metav1.GetControllerOf(scratch)
		Expect(owner).NotTo(BeNil())
		Expect(owner.UID).To(Equal(b.UID))
		Expect(scratch.Labels).To(HaveKeyWithValue(backupv1.LabelDrillOf, "nightly"))
		Expect(scratch.Labels).To(HaveKeyWithValue(oplabels.ManagedByLabel, oplabels.OperatorName))
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(b.Status.Verification).NotTo(BeNil())
			g.Expect(b.Status.Verification.Result).To(Equal(backupv1.VerificationRunning))
			g.Expect(b.Status.Verification.StartTime).NotTo(BeNil())
			c := meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionVerified)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
		}).Should(Succeed())
		// No Job while the scratch database is not Ready.
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: jobs.DrillName(b)}, &batchv1.Job{}))
		}).Should(BeTrue())

		By("the scratch database Ready: the drill Job, as the scratch role, in the server's postgres image")
		readyScratch(ctx, scratch)
		job := awaitDrillJob(ctx, b)
		Expect(metav1.IsControlledBy(job, b)).To(BeTrue())
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("registry.test/postgres:15"))
		Expect(c.Command).To(ContainElements("verify", "--scratch-url-env", "--result-file", jobs.TerminationLog, b.Status.ID))
		Expect(c.Env[0].ValueFrom.SecretKeyRef.Name).To(Equal("nightly-drill-postgres"))

		code, result := runDrill(ctx, job)
		Expect(code).To(BeZero(), result)
		verificationOf(ctx, b)
		v := b.Status.Verification
		Expect(v.Result).To(Equal(backupv1.VerificationVerified), v.Message)
		Expect(v.RecoveryTime).NotTo(BeNil())
		Expect(v.RecoveryTime.Duration).To(BeNumerically(">", 0))
		Expect(v.CompletionTime).NotTo(BeNil())
		Expect(v.StartTime).NotTo(BeNil())
		Expect(v.Message).To(ContainSubstring("matches the facts recorded at backup time"))
		cond := meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionVerified)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		Expect(cond.Reason).To(Equal(backupv1.ReasonRestored))
		Expect(readyOfBackup(b).Reason).To(Equal(backupv1.ReasonCompleted), "the backup's own status is left as it was")

		By("the scratch PostgresDatabase and the Job are deleted; the result stays")
		gone(ctx, scratch)
		gone(ctx, job)
		Eventually(func() string { return eventsText(f.ns) }).Should(And(ContainSubstring(eventDrillStarted), ContainSubstring(eventDrillVerified)))
		for _, text := range []string{fmt.Sprintf("%+v", b.Status), eventsText(f.ns)} {
			Expect(text).NotTo(ContainSubstring("pw-"))
			Expect(text).NotTo(ContainSubstring(s3.SecretAccessKey))
		}

		By("a drill is run once: woken again, the Backup is not written and no scratch database comes back")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			b.Annotations = map[string]string{"touched": "yes"}
			return k8s.Update(ctx, b)
		})).To(Succeed())
		rv := b.ResourceVersion
		Consistently(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			g.Expect(b.ResourceVersion).To(Equal(rv))
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(scratch), &homelabv1.PostgresDatabase{}))).To(BeTrue())
		}).Should(Succeed())
	})

	It("is Failed with ChecksumMismatch when the artifact's bytes changed in the store", func(ctx SpecContext) {
		f := completedDrilledBackup(ctx, "drill-flip", nil)
		b := f.b
		flipData(ctx, f.bucket, backup.Ref{Namespace: f.ns, Kind: "PostgresDatabase", Name: "app", ID: b.Status.ID})
		scratch := awaitScratch(ctx, b)
		readyScratch(ctx, scratch)
		job := awaitDrillJob(ctx, b)
		code, result := runDrill(ctx, job)
		Expect(code).To(Equal(1), result)
		verificationOf(ctx, b)
		v := b.Status.Verification
		Expect(v.Result).To(Equal(backupv1.VerificationFailed))
		Expect(v.Message).To(HavePrefix(backupv1.ReasonChecksumMismatch + ": "))
		Expect(v.CompletionTime).NotTo(BeNil())
		cond := meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionVerified)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Reason).To(Equal(backupv1.ReasonChecksumMismatch))
		Eventually(func() string { return eventsText(f.ns) }).Should(ContainSubstring(eventDrillFailed))
		gone(ctx, scratch)
		gone(ctx, job)
	})

	It("is Failed with the container's last words when the drill Job fails without a result line", func(ctx SpecContext) {
		f := completedDrilledBackup(ctx, "drill-dead", nil)
		b := f.b
		scratch := awaitScratch(ctx, b)
		readyScratch(ctx, scratch)
		job := awaitDrillJob(ctx, b)
		// The program never ran: the kubelet keeps the end of the log (FallbackToLogsOnError).
		endedPod(ctx, job, jobs.ContainerDrill, 127, "exec /shared/platform-operator: no such file or directory")
		finishJob(ctx, job, false)
		verificationOf(ctx, b)
		Expect(b.Status.Verification.Result).To(Equal(backupv1.VerificationFailed))
		Expect(b.Status.Verification.Message).To(ContainSubstring(backupv1.ReasonJobFailed))
		Expect(b.Status.Verification.Message).To(ContainSubstring("no such file or directory"))
		gone(ctx, scratch)
	})

	It("never adopts a PostgresDatabase that holds the scratch name: Failed, and the object is untouched", func(ctx SpecContext) {
		var foreign *homelabv1.PostgresDatabase
		f := completedDrilledBackup(ctx, "drill-taken", func(ns string) {
			foreign = &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly-drill",
				Labels: map[string]string{"owner": "someone"}},
				Spec: homelabv1.PostgresDatabaseSpec{Connection: "other", ReclaimPolicy: homelabv1.DatabaseReclaimRetain}}
			Expect(k8s.Create(ctx, foreign)).To(Succeed())
		})
		b := verificationOf(ctx, f.b)
		Expect(b.Status.Verification.Result).To(Equal(backupv1.VerificationFailed))
		Expect(b.Status.Verification.Message).To(ContainSubstring(reconcile.ReasonNameConflict))
		Expect(b.Status.Verification.Message).To(ContainSubstring("not this Backup's"))
		Eventually(func() string { return eventsText(f.ns) }).Should(ContainSubstring(eventDrillFailed))
		rv := foreign.ResourceVersion
		Consistently(func(g Gomega) {
			live := &homelabv1.PostgresDatabase{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), live)).To(Succeed())
			g.Expect(live.ResourceVersion).To(Equal(rv))
			g.Expect(live.OwnerReferences).To(BeEmpty())
			g.Expect(live.DeletionTimestamp).To(BeNil())
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "nightly-drill"}, &batchv1.Job{}))).To(BeTrue())
		}).Should(Succeed())
	})

	It("accepts verify for every source kind, at creation and later, and never turns it off", func(ctx SpecContext) {
		ns := newNamespace("drill-admission")
		for _, kind := range []backupv1.SourceKind{backupv1.SourceSojuBouncer, backupv1.SourceErgoNetwork} {
			name := strings.ToLower(string(kind))
			b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: kind, Name: "x"}, Store: "main", Verify: true}}
			Expect(k8s.Create(ctx, b)).To(Succeed(), "verify of a %s backup", kind)
			sched := &backupv1.BackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: backupv1.BackupScheduleSpec{Schedule: "0 3 * * *", Suspend: true, Source: backupv1.BackupSource{Kind: kind, Name: "x"}, Store: "main",
					Retention: &backupv1.BackupRetention{KeepLast: ptr.To[int32](3)}, Verify: true}}
			Expect(k8s.Create(ctx, sched)).To(Succeed(), "verify of a %s schedule", kind)
		}

		db := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "app"}, Store: "main", Verify: true}}
		Expect(k8s.Create(ctx, db)).To(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
				return err
			}
			db.Spec.Verify = false
			return k8s.Update(ctx, db)
		})).To(MatchError(ContainSubstring("spec.verify cannot be turned off")))

		later := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "app"}, Store: "main"}}
		Expect(k8s.Create(ctx, later)).To(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(later), later); err != nil {
				return err
			}
			later.Spec.Verify = true
			return k8s.Update(ctx, later)
		})).To(Succeed(), "verify can be turned on after creation")
	})
})
