package backup

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/datastore"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
)

// drilledErgoBackup takes a Backup with spec.verify of a Ready network whose claim holds fixture (its Job
// run on this machine), and returns it Completed.
func drilledErgoBackup(ctx context.Context, ns, network, name string, fixture datastore.Fixture) *backupv1.Backup {
	GinkgoHelper()
	n := createErgoNetwork(ctx, ns, network)
	readyErgoNetwork(ctx, n)
	runningErgoPod(ctx, n)
	claim := GinkgoT().TempDir()
	_, err := datastore.WriteFixture(filepath.Join(claim, ergo.DatastoreFile), fixture)
	Expect(err).NotTo(HaveOccurred())
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: network}, Store: "main", Verify: true}}
	Expect(k8s.Create(ctx, b)).To(Succeed())
	job := awaitJob(ctx, b)
	runDatastoreJobLocally(ctx, job, claim)
	finishJob(ctx, job, true)
	return backupPhase(ctx, b, backupv1.BackupCompleted)
}

// runDatastoreDrill runs the datastore drill Job's container on this machine (the operator's binary for
// the image's /manager, no data tool on the PATH), ends its pod with the result as termination message,
// and marks the Job ended. It returns the exit code and the result with the output.
func runDatastoreDrill(ctx context.Context, job *batchv1.Job) (int, string) {
	GinkgoHelper()
	bin := operatorBinary()
	r, err := jobrun.Local{Reader: k8s, Binary: bin, Path: "/usr/bin:/bin", Dir: GinkgoT().TempDir(),
		Commands: map[string]string{jobs.OperatorCommand: bin}}.Run(ctx, job)
	Expect(err).NotTo(HaveOccurred())
	endedPod(ctx, job, jobs.ContainerDrill, int32(r.ExitCode), r.Termination)
	finishJob(ctx, job, r.ExitCode == 0)
	return r.ExitCode, r.Termination + "\n" + r.Output
}

// drilledSojuBackup makes a SojuBouncer "bnc" Ready on a real database with rows (what the irc controller,
// not run here, would report), naming adminSecret (empty: the operator-wide connection), and a Completed
// Backup of it with spec.verify (its Job run on this machine).
func drilledSojuBackup(ctx context.Context, prefix, adminSecret string) drillFixture {
	GinkgoHelper()
	ns := newNamespace(prefix)
	bucket := readyStore(ns)
	url := tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_"))
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bnc-db"},
		StringData: map[string]string{"url": url}})).To(Succeed())
	if adminSecret != "" {
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: adminSecret},
			StringData: map[string]string{"host": pg.Host, "port": fmt.Sprint(pg.Port), "user": pg.User, "password": pg.Password, "sslmode": "disable"}})).To(Succeed())
	}
	bnc := &ircv1.SojuBouncer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bnc"},
		Spec: ircv1.SojuBouncerSpec{Hostname: "bnc.irc.test", Listeners: []ircv1.Listener{{Address: ":6667"}},
			Database: ircv1.SojuDatabaseSpec{AdminSecretName: adminSecret}}}
	Expect(k8s.Create(ctx, bnc)).To(Succeed())
	bnc.Status.DatabaseSecretName = "bnc-db"
	bnc.Status.Conditions = []metav1.Condition{{Type: ircv1.ConditionDatabase, Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "test", LastTransitionTime: metav1.Now(), ObservedGeneration: bnc.Generation}}
	Expect(k8s.Status().Update(ctx, bnc)).To(Succeed())
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceSojuBouncer, Name: "bnc"}, Store: "main", Verify: true}}
	Expect(k8s.Create(ctx, b)).To(Succeed())
	job := awaitJob(ctx, b)
	code, out := runJobLocally(ctx, job)
	Expect(code).To(BeZero(), out)
	finishJob(ctx, job, true)
	backupPhase(ctx, b, backupv1.BackupCompleted)
	return drillFixture{ns: ns, bucket: bucket, b: b}
}

// expectVerified checks a drill that ended Verified: status.verification, the Verified condition.
func expectVerified(b *backupv1.Backup) {
	GinkgoHelper()
	v := b.Status.Verification
	Expect(v.Result).To(Equal(backupv1.VerificationVerified), v.Message)
	Expect(v.Message).To(ContainSubstring("matches the facts recorded at backup time"))
	Expect(v.RecoveryTime).NotTo(BeNil())
	Expect(v.RecoveryTime.Duration).To(BeNumerically(">", 0))
	Expect(v.StartTime).NotTo(BeNil())
	Expect(v.CompletionTime).NotTo(BeNil())
	cond := meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionVerified)
	Expect(cond).NotTo(BeNil())
	Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	Expect(cond.Reason).To(Equal(backupv1.ReasonRestored))
}

// expectChecksumMismatch checks a drill that ended Failed on the artifact's changed bytes.
func expectChecksumMismatch(b *backupv1.Backup) {
	GinkgoHelper()
	v := b.Status.Verification
	Expect(v.Result).To(Equal(backupv1.VerificationFailed))
	Expect(v.Message).To(HavePrefix(backupv1.ReasonChecksumMismatch + ": "))
	cond := meta.FindStatusCondition(b.Status.Conditions, backupv1.ConditionVerified)
	Expect(cond).NotTo(BeNil())
	Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	Expect(cond.Reason).To(Equal(backupv1.ReasonChecksumMismatch))
}

// noCredentials checks that neither the Backup's status nor the namespace's events hold a password.
func noCredentials(b *backupv1.Backup) {
	GinkgoHelper()
	for _, text := range []string{fmt.Sprintf("%+v", b.Status), eventsText(b.Namespace)} {
		Expect(text).NotTo(ContainSubstring("pw-"))
		Expect(text).NotTo(ContainSubstring(s3.SecretAccessKey))
		Expect(text).NotTo(ContainSubstring(pg.Password))
	}
}

var _ = Describe("Restore drills of an ErgoNetwork Backup (spec.verify)", func() {
	fixture := datastore.Fixture{Accounts: []string{"Alice", "bob", "carol"}, Channels: []string{"#ops", "#lobby"}}

	It("runs a Job in the operator's image that downloads ircd.db and opens it with buntdb: Verified, with no scratch object, then deletes the Job", func(ctx SpecContext) {
		ns := newNamespace("drill-ergo")
		readyStore(ns)
		b := drilledErgoBackup(ctx, ns, "chat", "nightly", fixture)

		job := awaitDrillJob(ctx, b)
		Expect(metav1.IsControlledBy(job, b)).To(BeTrue())
		pod := job.Spec.Template.Spec
		Expect(pod.InitContainers).To(BeEmpty())
		Expect(pod.Containers).To(HaveLen(1))
		c := pod.Containers[0]
		Expect(c.Name).To(Equal(jobs.ContainerDrill))
		Expect(c.Image).To(Equal(testOptions.OperatorImage))
		Expect(c.Command).To(ContainElements(jobs.OperatorCommand, "verify", "--kind", "ErgoNetwork", b.Status.ID, "--result-file", jobs.TerminationLog))
		Expect(c.Command).NotTo(ContainElement("--scratch-url-env"))
		Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "TMPDIR", Value: jobs.DrillTmpDir}))
		for _, e := range c.Env {
			Expect(e.Name).NotTo(Equal(jobs.DatabaseURLEnv))
		}
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", jobs.DrillTmpDir)))
		Expect(job.Spec.ActiveDeadlineSeconds).NotTo(BeNil())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.DrillName(b)}, &homelabv1.PostgresDatabase{}))).
			To(BeTrue(), "an ErgoNetwork drill makes no scratch database")

		code, out := runDatastoreDrill(ctx, job)
		Expect(code).To(BeZero(), out)
		expectVerified(verificationOf(ctx, b))
		Expect(b.Status.Verification.Message).To(ContainSubstring("ErgoNetwork"))
		gone(ctx, job)
		Eventually(func() string { return eventsText(ns) }).Should(And(ContainSubstring(eventDrillStarted), ContainSubstring(eventDrillVerified)))
		noCredentials(b)
	})

	It("is Failed with ChecksumMismatch when the datastore's bytes changed in the store", func(ctx SpecContext) {
		ns := newNamespace("drill-ergo-flip")
		bucket := readyStore(ns)
		b := drilledErgoBackup(ctx, ns, "chat", "nightly", fixture)
		flipData(ctx, bucket, backup.Ref{Namespace: ns, Kind: "ErgoNetwork", Name: "chat", ID: b.Status.ID})
		job := awaitDrillJob(ctx, b)
		code, out := runDatastoreDrill(ctx, job)
		Expect(code).To(Equal(1), out)
		expectChecksumMismatch(verificationOf(ctx, b))
		Eventually(func() string { return eventsText(ns) }).Should(ContainSubstring(eventDrillFailed))
		gone(ctx, job)
	})
})

var _ = Describe("Restore drills of a SojuBouncer Backup (spec.verify)", func() {
	It("restores into a scratch PostgresDatabase on a scratch PostgresConnection using the bouncer's admin Secret: Verified, then deletes all three", func(ctx SpecContext) {
		f := drilledSojuBackup(ctx, "drill-soju", "soju-admin")
		b := f.b

		By("the scratch PostgresDatabase on the scratch PostgresConnection, which names the bouncer's admin Secret")
		scratch := awaitScratch(ctx, b)
		Expect(scratch.Spec.Connection).To(Equal("nightly-drill"))
		Expect(scratch.Spec.ReclaimPolicy).To(Equal(homelabv1.DatabaseReclaimDelete))
		Expect(metav1.IsControlledBy(scratch, b)).To(BeTrue())
		conn := &homelabv1.PostgresConnection{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "nightly-drill"}, conn)
		}).Should(Succeed())
		Expect(conn.Spec.Secret).To(Equal("soju-admin"))
		Expect(conn.Spec.AllowedNamespaces).To(BeEmpty(), "the scratch connection serves its own namespace only")
		Expect(metav1.IsControlledBy(conn, scratch)).To(BeTrue(), "the connection goes only after the database it drops through")
		Expect(conn.Labels).To(HaveKeyWithValue(backupv1.LabelDrillOf, "nightly"))

		By("the scratch database Ready: the drill Job restores into it and counts the rows")
		readyScratch(ctx, scratch)
		job := awaitDrillJob(ctx, b)
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("registry.test/postgres:15"))
		Expect(c.Command).To(ContainElements("verify", "--kind", "SojuBouncer", "--scratch-url-env"))
		code, out := runDrill(ctx, job)
		Expect(code).To(BeZero(), out)
		expectVerified(verificationOf(ctx, b))

		By("the Job, the scratch database and then its connection are deleted; the result stays")
		gone(ctx, job)
		gone(ctx, scratch)
		gone(ctx, conn)
		Eventually(func() string { return eventsText(f.ns) }).Should(And(ContainSubstring(eventDrillStarted), ContainSubstring(eventDrillVerified),
			ContainSubstring("PostgresConnection nightly-drill")))
		noCredentials(b)
	})

	It("is Failed with ChecksumMismatch when the dump's bytes changed in the store", func(ctx SpecContext) {
		f := drilledSojuBackup(ctx, "drill-soju-flip", "soju-admin")
		b := f.b
		flipData(ctx, f.bucket, backup.Ref{Namespace: f.ns, Kind: "SojuBouncer", Name: "bnc", ID: b.Status.ID})
		scratch := awaitScratch(ctx, b)
		readyScratch(ctx, scratch)
		job := awaitDrillJob(ctx, b)
		code, out := runDrill(ctx, job)
		Expect(code).To(Equal(1), out)
		expectChecksumMismatch(verificationOf(ctx, b))
		gone(ctx, scratch)
		gone(ctx, job)
	})

	It("is Failed, making nothing, for a bouncer on the operator-wide admin connection", func(ctx SpecContext) {
		f := drilledSojuBackup(ctx, "drill-soju-wide", "")
		b := verificationOf(ctx, f.b)
		Expect(b.Status.Verification.Result).To(Equal(backupv1.VerificationFailed))
		Expect(b.Status.Verification.Message).To(HavePrefix(backupv1.ReasonScratchNotReady + ": "))
		Expect(b.Status.Verification.Message).To(ContainSubstring("spec.database.adminSecretName"))
		Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "nightly-drill"}, &homelabv1.PostgresDatabase{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "nightly-drill"}, &homelabv1.PostgresConnection{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "nightly-drill"}, &batchv1.Job{}))).To(BeTrue())
		}).Should(Succeed())
	})
})
