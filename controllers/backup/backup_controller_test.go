package backup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/objectstore"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
)

// tenantDatabase makes a role and a database it owns on the suite's server, with rows, and returns the
// role's connection URL: what a PostgresDatabase's Secret holds.
func tenantDatabase(ctx context.Context, name string) string {
	GinkgoHelper()
	conn, err := pg.Connect(ctx)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close(ctx) }()
	password := "pw-" + name
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE ROLE %q LOGIN PASSWORD '%s'`, name, password))
	Expect(err).NotTo(HaveOccurred())
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q OWNER %q`, name, name))
	Expect(err).NotTo(HaveOccurred())
	url := fmt.Sprintf("postgresql://%s:%s@%s:%d/%s?sslmode=disable", name, password, pg.Host, pg.Port, name)
	tenant, err := pgx.Connect(ctx, url)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = tenant.Close(ctx) }()
	_, err = tenant.Exec(ctx, `CREATE TABLE notes (id int PRIMARY KEY, body text); INSERT INTO notes SELECT g, md5(g::text) FROM generate_series(1, 500) g`)
	Expect(err).NotTo(HaveOccurred())
	return url
}

// readyPostgresDatabase makes a PostgresDatabase and gives it, through the status subresource, what the
// homelab controller would (which this suite does not run): Ready and its Secret, holding url.
func readyPostgresDatabase(ctx context.Context, ns, name, url string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-postgres"},
		StringData: map[string]string{"url": url}})).To(Succeed())
	db := &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.PostgresDatabaseSpec{Connection: "main"}}
	Expect(k8s.Create(ctx, db)).To(Succeed())
	db.Status.SecretName = name + "-postgres"
	db.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", Message: "test",
		LastTransitionTime: metav1.Now(), ObservedGeneration: db.Generation}}
	Expect(k8s.Status().Update(ctx, db)).To(Succeed())
}

// readyStore makes a Ready BackupStore "main" in ns on a bucket of its own, and returns the bucket.
func readyStore(ns string) string {
	GinkgoHelper()
	bucket := newBucket()
	createCredentials(ns, "s3", s3.AccessKeyID, s3.SecretAccessKey)
	storeReady(createStore(ns, "main", bucket, "prod", "s3"), metav1.ConditionTrue, backupv1.ReasonReachable)
	return bucket
}

// createBackup makes a Backup of the PostgresDatabase source.
func createBackup(ctx context.Context, ns, name, source string, policy backupv1.ArtifactPolicy) *backupv1.Backup {
	GinkgoHelper()
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: source},
			Store: "main", ArtifactPolicy: policy}}
	Expect(k8s.Create(ctx, b)).To(Succeed())
	return b
}

// awaitJob waits for the Backup's Job.
func awaitJob(ctx context.Context, b *backupv1.Backup) *batchv1.Job {
	GinkgoHelper()
	job := &batchv1.Job{}
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: jobs.Name(b)}, job)
	}).Should(Succeed())
	return job
}

// runJobLocally runs the Job's main container command on this machine, as the kubelet would in the pod
// (jobrun): the operator's freshly built binary, the machine's pg_dump (the Debian server's major).
func runJobLocally(ctx context.Context, job *batchv1.Job) (int, string) {
	GinkgoHelper()
	code, out, _ := runJobCommand(ctx, job)
	return code, out
}

// runJobCommand is runJobLocally that also returns what the program wrote to the termination log.
func runJobCommand(ctx context.Context, job *batchv1.Job) (code int, out, termination string) {
	GinkgoHelper()
	local, err := jobrun.WithPostgres(k8s, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	r, err := local.Run(ctx, job)
	Expect(err).NotTo(HaveOccurred())
	return r.ExitCode, r.Output, r.Termination
}

// finishJob marks the Job succeeded or failed through the status subresource, as the Job controller would.
func finishJob(ctx context.Context, job *batchv1.Job, succeeded bool) {
	GinkgoHelper()
	Expect(testutil.FinishJob(ctx, k8s, job, succeeded, batchv1.JobReasonBackoffLimitExceeded, "")).To(Succeed())
}

// repository is ns's repository on bucket of the suite's store, prefix prod.
func repository(ctx context.Context, bucket, ns string) *backup.Repository {
	GinkgoHelper()
	st, err := objectstore.New(s3.Config(bucket, "prod"))
	Expect(err).NotTo(HaveOccurred())
	scoped, err := st.Scope(ns)
	Expect(err).NotTo(HaveOccurred())
	return backup.NewRepository(scoped)
}

// backupPhase waits for the Backup's phase.
func backupPhase(ctx context.Context, b *backupv1.Backup, phase backupv1.BackupPhase) *backupv1.Backup {
	GinkgoHelper()
	Eventually(func(g Gomega) backupv1.BackupPhase {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
		return b.Status.Phase
	}).Should(Equal(phase))
	return b
}

// operatorBinary is $OPERATOR_BINARY, else the operator built once for the package.
func operatorBinary() string {
	GinkgoHelper()
	bin, err := jobrun.OperatorBinary()
	Expect(err).NotTo(HaveOccurred())
	return bin
}

var _ = Describe("Backup of a PostgresDatabase", func() {
	It("runs a Job in the server's postgres image, and is Completed with the store's size and checksum; Delete removes the artifact", func(ctx SpecContext) {
		ns := newNamespace("backup-ok")
		bucket := readyStore(ns)
		url := tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_"))
		readyPostgresDatabase(ctx, ns, "app", url)
		b := createBackup(ctx, ns, "nightly", "app", backupv1.ArtifactDelete)
		job := awaitJob(ctx, b)
		// The suite's server is PostgreSQL 15: the image is the template's for 15.
		Expect(job.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.test/postgres:15"))
		// Bounded by --backup-job-deadline's default: a pod that never starts fails the Backup in the end.
		Expect(job.Spec.ActiveDeadlineSeconds).To(HaveValue(BeEquivalentTo(int64(DefaultJobDeadline / time.Second))))
		Expect(job.Spec.Template.Spec.InitContainers[0].Image).To(Equal(testOptions.OperatorImage))
		backupPhase(ctx, b, backupv1.BackupRunning)
		Expect(b.Status.ID).To(Equal(jobs.ID(b)))

		code, out := runJobLocally(ctx, job)
		Expect(code).To(BeZero(), out)
		finishJob(ctx, job, true)
		backupPhase(ctx, b, backupv1.BackupCompleted)

		repo := repository(ctx, bucket, ns)
		ref := backup.Ref{Namespace: ns, Kind: "PostgresDatabase", Name: "app", ID: b.Status.ID}
		m, err := repo.Manifest(ctx, ref)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Status.Size).To(Equal(m.Size))
		Expect(b.Status.Size).To(BeNumerically(">", 0))
		Expect(b.Status.SHA256).To(Equal(m.SHA256))
		Expect(b.Status.Location).To(Equal(fmt.Sprintf("s3://%s/prod/%s/PostgresDatabase/app/%s/data", bucket, ns, b.Status.ID)))
		Expect(b.Status.Format).To(Equal("pg_dump-custom"))
		Expect(b.Status.ToolVersion).To(Equal("pg_dump (PostgreSQL) 15"))
		Expect(b.Status.CompletionTime).NotTo(BeNil())
		Expect(b.Finalizers).To(ContainElement(BackupFinalizer))
		// No credential in the status or the events.
		for _, text := range []string{fmt.Sprintf("%+v", b.Status), eventsText(ns)} {
			Expect(text).NotTo(ContainSubstring(s3.SecretAccessKey))
			Expect(text).NotTo(ContainSubstring("pw-"))
		}

		// An unchanged Completed Backup is not written again: wake it with an annotation and compare.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			b.Annotations = map[string]string{"touched": "yes"}
			return k8s.Update(ctx, b)
		})).To(Succeed())
		rv := b.ResourceVersion
		Consistently(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return b.ResourceVersion
		}).Should(Equal(rv))

		// artifactPolicy Delete: deleting the Backup deletes the artifact, then the Backup goes.
		Expect(k8s.Delete(ctx, b)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(b), &backupv1.Backup{}))
		}).Should(BeTrue())
		list, err := repo.List(ctx, "PostgresDatabase", "app")
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(BeEmpty())
	})

	It("keeps the artifact of a Retain Backup that is deleted", func(ctx SpecContext) {
		ns := newNamespace("backup-retain")
		bucket := readyStore(ns)
		readyPostgresDatabase(ctx, ns, "app", tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_")))
		b := createBackup(ctx, ns, "keep", "app", backupv1.ArtifactRetain)
		job := awaitJob(ctx, b)
		code, out := runJobLocally(ctx, job)
		Expect(code).To(BeZero(), out)
		finishJob(ctx, job, true)
		backupPhase(ctx, b, backupv1.BackupCompleted)
		Expect(b.Finalizers).NotTo(ContainElement(BackupFinalizer))
		Expect(k8s.Delete(ctx, b)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(b), &backupv1.Backup{}))
		}).Should(BeTrue())
		list, err := repository(ctx, bucket, ns).List(ctx, "PostgresDatabase", "app")
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
	})

	It("is Failed when its Job fails, and the store holds no artifact", func(ctx SpecContext) {
		ns := newNamespace("backup-fail")
		bucket := readyStore(ns)
		// The role's password is wrong in the Secret: the operator cannot learn the version, so the Secret
		// is right for the operator's check and made wrong before the Job runs.
		url := tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_"))
		readyPostgresDatabase(ctx, ns, "app", url)
		b := createBackup(ctx, ns, "broken", "app", backupv1.ArtifactRetain)
		job := awaitJob(ctx, b)
		var s corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-postgres"}, &s)).To(Succeed())
		s.Data["url"] = []byte(strings.Replace(url, ":pw-", ":wrong-", 1))
		Expect(k8s.Update(ctx, &s)).To(Succeed())
		code, out := runJobLocally(ctx, job)
		Expect(code).To(Equal(1), out)
		// The kubelet would keep the end of the container's log as its termination message
		// (FallbackToLogsOnError): a pod of the Job with the program's real output as it.
		failedPod(ctx, job, out)
		finishJob(ctx, job, false)
		backupPhase(ctx, b, backupv1.BackupFailed)
		Expect(readyOfBackup(b).Reason).To(Equal(backupv1.ReasonJobFailed))
		Expect(readyOfBackup(b).Message).To(ContainSubstring("backup put"))
		Expect(readyOfBackup(b).Message).To(ContainSubstring("password authentication failed"))
		for _, text := range []string{readyOfBackup(b).Message, eventsText(ns)} {
			Expect(text).NotTo(ContainSubstring("wrong-"))
			Expect(text).NotTo(ContainSubstring(s3.SecretAccessKey))
		}
		list, err := repository(ctx, bucket, ns).List(ctx, "PostgresDatabase", "app")
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(BeEmpty())
	})

	It("is Failed naming the deadline when its Job never finished within --backup-job-deadline", func(ctx SpecContext) {
		ns := newNamespace("backup-deadline")
		readyStore(ns)
		readyPostgresDatabase(ctx, ns, "app", tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_")))
		b := createBackup(ctx, ns, "stuck", "app", backupv1.ArtifactRetain)
		job := awaitJob(ctx, b)
		// The Job controller's verdict on a pod that never started (no program ran, so no last words).
		Expect(testutil.FinishJob(ctx, k8s, job, false, batchv1.JobReasonDeadlineExceeded, "")).To(Succeed())
		backupPhase(ctx, b, backupv1.BackupFailed)
		Expect(readyOfBackup(b).Reason).To(Equal(backupv1.ReasonJobFailed))
		Expect(readyOfBackup(b).Message).To(ContainSubstring("did not finish within its deadline of 24h0m0s (--backup-job-deadline)"))
	})

	It("cannot reach a source in another namespace, and waits for a store that is not Ready", func(ctx SpecContext) {
		// The source's namespace is the Backup's: BackupSource has no namespace field. A Backup naming a
		// database that exists only in another namespace finds nothing.
		owner := newNamespace("backup-owner")
		readyPostgresDatabase(ctx, owner, "app", tenantDatabase(ctx, strings.ReplaceAll(owner, "-", "_")))
		thief := newNamespace("backup-thief")
		readyStore(thief)
		b := createBackup(ctx, thief, "steal", "app", backupv1.ArtifactRetain)
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return conditionReason(b, backupv1.ConditionSource)
		}).Should(Equal(backupv1.ReasonSourceMissing))
		Expect(b.Status.Phase).To(Equal(backupv1.BackupPending))
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: thief, Name: jobs.Name(b)}, &batchv1.Job{}))
		}).Should(BeTrue())

		// A store that is not Ready: Pending with Store False (control above: a Ready store gives a Job).
		lone := newNamespace("backup-nostore")
		readyPostgresDatabase(ctx, lone, "app", tenantDatabase(ctx, strings.ReplaceAll(lone, "-", "_")))
		nb := createBackup(ctx, lone, "waiting", "app", backupv1.ArtifactRetain)
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nb), nb)).To(Succeed())
			return conditionReason(nb, backupv1.ConditionStore)
		}).Should(Equal(backupv1.ReasonStoreNotReady))
		Expect(nb.Status.Phase).To(Equal(backupv1.BackupPending))
	})
})

// readyOfBackup is the Backup's Ready condition as last read.
func readyOfBackup(b *backupv1.Backup) metav1.Condition {
	for _, c := range b.Status.Conditions {
		if c.Type == "Ready" {
			return c
		}
	}
	return metav1.Condition{}
}

// conditionReason is the reason of the Backup's condition t as last read.
func conditionReason(b *backupv1.Backup, t string) string {
	for _, c := range b.Status.Conditions {
		if c.Type == t {
			return c.Reason
		}
	}
	return ""
}

var _ = Describe("Backup of a SojuBouncer", func() {
	It("dumps the bouncer's database with the role of its Secret <name>-db, and waits while the database is not ready", func(ctx SpecContext) {
		ns := newNamespace("backup-soju")
		bucket := readyStore(ns)
		url := tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_"))
		Expect(k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bnc-db"},
			StringData: map[string]string{"url": url}})).To(Succeed())
		bnc := &ircv1.SojuBouncer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bnc"},
			Spec: ircv1.SojuBouncerSpec{Hostname: "bnc.irc.test", Listeners: []ircv1.Listener{{Address: ":6667"}}}}
		Expect(k8s.Create(ctx, bnc)).To(Succeed())
		b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bnc-now"},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceSojuBouncer, Name: "bnc"}, Store: "main"}}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		// Hostile first: no DatabaseReady yet, so no Job.
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return conditionReason(b, backupv1.ConditionSource)
		}).Should(Equal(backupv1.ReasonSourceNotReady))
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.Name(b)}, &batchv1.Job{}))).To(BeTrue())

		// The irc controller (not run here) would report the database ready and its Secret.
		bnc.Status.DatabaseSecretName = "bnc-db"
		bnc.Status.Conditions = []metav1.Condition{{Type: ircv1.ConditionDatabase, Status: metav1.ConditionTrue, Reason: "Ready",
			Message: "test", LastTransitionTime: metav1.Now(), ObservedGeneration: bnc.Generation}}
		Expect(k8s.Status().Update(ctx, bnc)).To(Succeed())
		job := awaitJob(ctx, b)
		env := job.Spec.Template.Spec.Containers[0].Env
		Expect(env[0].ValueFrom.SecretKeyRef.Name).To(Equal("bnc-db"))
		code, out := runJobLocally(ctx, job)
		Expect(code).To(BeZero(), out)
		finishJob(ctx, job, true)
		backupPhase(ctx, b, backupv1.BackupCompleted)
		list, err := repository(ctx, bucket, ns).List(ctx, "SojuBouncer", "bnc")
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
		Expect(list[0].SHA256).To(Equal(b.Status.SHA256))
	})
})

// failedPod makes a pod of job whose backup container ended with exit code 1 and message, as the kubelet
// reports it.
func failedPod(ctx context.Context, job *batchv1.Job, message string) {
	GinkgoHelper()
	endedPod(ctx, job, jobs.ContainerBackup, 1, message)
}

// endedPod makes a pod of job whose container ended with code and message, as the kubelet reports it.
func endedPod(ctx context.Context, job *batchv1.Job, container string, code int32, message string) {
	GinkgoHelper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, GenerateName: job.Name + "-",
		Labels: map[string]string{batchv1.JobNameLabel: job.Name}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: container, Image: "x"}}}}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	reason := "Completed"
	pod.Status.Phase = corev1.PodSucceeded
	if code != 0 {
		pod.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Image: "x", ImageID: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message}}}}
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
}

var _ = Describe("Backup deletion with a store that refuses", func() {
	It("keeps the finalizer while the artifact cannot be deleted, and lets go on the release annotation with a Warning", func(ctx SpecContext) {
		ns := newNamespace("backup-release")
		bucket := readyStore(ns)
		readyPostgresDatabase(ctx, ns, "app", tenantDatabase(ctx, strings.ReplaceAll(ns, "-", "_")))
		b := createBackup(ctx, ns, "held", "app", backupv1.ArtifactDelete)
		job := awaitJob(ctx, b)
		code, out := runJobLocally(ctx, job)
		Expect(code).To(BeZero(), out)
		finishJob(ctx, job, true)
		backupPhase(ctx, b, backupv1.BackupCompleted)

		// The store now refuses the credentials: the artifact cannot be deleted.
		var secret corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3"}, &secret)).To(Succeed())
		secret.Data["AWS_SECRET_ACCESS_KEY"] = []byte("refused-secret-123")
		Expect(k8s.Update(ctx, &secret)).To(Succeed())
		Expect(k8s.Delete(ctx, b)).To(Succeed())
		Eventually(func() string { return eventsText(ns) }).Should(ContainSubstring(reasonDeleteFailed))
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return conditionReason(b, backupv1.ConditionStore)
		}).Should(Equal(backupv1.ReasonCredentialsRefused))
		Expect(b.Finalizers).To(ContainElement(BackupFinalizer))
		Expect(eventsText(ns)).NotTo(ContainSubstring("refused-secret-123"))

		// The escape: the annotation releases the finalizer, with a Warning naming the artifact left behind.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			b.Annotations = map[string]string{ReleaseFinalizerAnnotation: "true"}
			return k8s.Update(ctx, b)
		})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(b), &backupv1.Backup{}))
		}).Should(BeTrue())
		Eventually(func() string { return eventsText(ns) }).Should(ContainSubstring(reasonReleased))
		// The artifact is still in the store (read with the right credentials).
		list, err := repository(ctx, bucket, ns).List(ctx, "PostgresDatabase", "app")
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
	})
})
