package irc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/irc/soju/sojutest"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
	"github.com/platform-operator/platform-operator/internal/testutil/s3test"
)

// sojuTestOperatorImage is the restore Job's init container image; envtest has no kubelet, so it never
// runs: the Jobs' main containers run on this machine (jobrun), with the operator's binary and this
// machine's pg_dump and pg_restore.
const sojuTestOperatorImage = "registry.test/platform-operator:test"

// sojuSchemaDDL is a soju database as soju v0.10.1 lays out the part these specs read: the version row
// soju checks at start ("Config", database/postgres.go) and the users, networks and channels with their
// keys, foreign keys and the enum type (database/postgres_schema.sql), written here from reading soju's
// source rather than by running soju (no soju binary or module in this repository). %d is the version.
const sojuSchemaDDL = `
CREATE TABLE "Config" (id SMALLINT PRIMARY KEY, version INTEGER NOT NULL, CHECK(id = 1));
INSERT INTO "Config" (id, version) VALUES (1, %d);
CREATE TABLE "User" (id SERIAL PRIMARY KEY, username VARCHAR(255) NOT NULL UNIQUE, password VARCHAR(255),
	admin BOOLEAN NOT NULL DEFAULT FALSE, nick VARCHAR(255), realname VARCHAR(255),
	created_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), enabled BOOLEAN NOT NULL DEFAULT TRUE,
	downstream_interacted_at TIMESTAMP WITH TIME ZONE, max_networks INTEGER NOT NULL DEFAULT -1);
CREATE TYPE sasl_mechanism AS ENUM ('PLAIN', 'EXTERNAL');
CREATE TABLE "Network" (id SERIAL PRIMARY KEY, name VARCHAR(255), "user" INTEGER NOT NULL REFERENCES "User"(id) ON DELETE CASCADE,
	addr VARCHAR(255) NOT NULL, nick VARCHAR(255), sasl_mechanism sasl_mechanism, sasl_plain_username VARCHAR(255),
	sasl_plain_password VARCHAR(255), enabled BOOLEAN NOT NULL DEFAULT TRUE, UNIQUE("user", addr, nick), UNIQUE("user", name));
CREATE INDEX "Network_user_index" ON "Network" ("user");
CREATE TABLE "Channel" (id SERIAL PRIMARY KEY, network INTEGER NOT NULL REFERENCES "Network"(id) ON DELETE CASCADE,
	name VARCHAR(255) NOT NULL, key VARCHAR(255), detached BOOLEAN NOT NULL DEFAULT FALSE, UNIQUE(network, name));
`

var _ = Describe("SojuBouncer restore", Ordered, func() {
	var (
		ctx    context.Context
		pg     *postgrestest.Server
		s3     *s3test.Server
		listed []string
		ns     string
		// writes counts the restore manager's write requests, by namespace.
		writes = &testutil.WriteCounter{}
	)

	BeforeAll(func() {
		ctx = suiteCtx
		var err error
		pg, err = postgrestest.Start(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(pg.Stop()).To(Succeed()) })
		s3, err = s3test.Start(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(s3.Stop()).To(Succeed()) })

		Expect(pg.CreateRole(ctx, "soju_operator", "operator-pw", "CREATEROLE CREATEDB")).To(Succeed())
		systemNS := newNamespace()
		Expect(k8s.Create(ctx, sojutest.ConnectionSecret(systemNS, "soju-db-admin", pg.Host, pg.Port, "soju_operator", "operator-pw"))).To(Succeed())
		for range 4 {
			listed = append(listed, newNamespace())
		}
		caps, err := platform.Discover(cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(caps.Backups).To(BeTrue())
		r := &SojuBouncerReconciler{Image: soju.DefaultImage, MaxConcurrentReconciles: 2,
			DefaultAdminSecret:     types.NamespacedName{Namespace: systemNS, Name: "soju-db-admin"},
			DefaultAdminNamespaces: listed,
			OperatorImage:          sojuTestOperatorImage, PostgresImage: "docker.io/library/postgres:%d"}
		mgrCtx, cancelMgr := context.WithCancel(suiteCtx)
		DeferCleanup(cancelMgr)
		mgr, err := manager.New(cfg, manager.Options{Options: ctrl.Options{
			Metrics:    metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			NewClient:  writes.NewClient,
		}}, caps, groupOf(sojuBouncers(r)))
		Expect(err).NotTo(HaveOccurred())
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(mgrCtx)).To(Succeed())
		}()
	})

	BeforeEach(func() {
		Expect(listed).NotTo(BeEmpty())
		ns, listed = listed[0], listed[1:]
	})

	bouncer := func(name string) *ircv1.SojuBouncer {
		GinkgoHelper()
		b := &ircv1.SojuBouncer{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b)).To(Succeed())
		return b
	}
	cond := func(name, t string) *metav1.Condition {
		b := &ircv1.SojuBouncer{}
		if k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b) != nil {
			return nil
		}
		for i := range b.Status.Conditions {
			if b.Status.Conditions[i].Type == t {
				return &b.Status.Conditions[i]
			}
		}
		return nil
	}
	eventually := func(name, t string, status metav1.ConditionStatus, reason string) metav1.Condition {
		GinkgoHelper()
		var c *metav1.Condition
		Eventually(func(g Gomega) {
			c = cond(name, t)
			g.Expect(c).NotTo(BeNil(), "no %s condition", t)
			g.Expect(c.Status).To(Equal(status), "%s: %s", t, c.Message)
			g.Expect(c.Reason).To(Equal(reason), "%s: %s", t, c.Message)
		}).Should(Succeed())
		return *c
	}
	noDeployment := func(name string) bool {
		return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &appsv1.Deployment{}))
	}
	dbURL := func(name string) string {
		GinkgoHelper()
		s := &corev1.Secret{}
		Eventually(get(ctx, s, ns, name+"-db")).Should(Succeed())
		return string(s.Data["url"])
	}
	// readyStore is a BackupStore "main" on a new bucket, Ready as the backup group's controller (not run
	// here) would make it.
	readyStore := func() *backupv1.BackupStore {
		GinkgoHelper()
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		bucket := "soju-" + hex.EncodeToString(b)
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
	// writeSoju lays out soju's schema at version in bouncer name's database, as its role, with users
	// (each with one network and two channels).
	writeSoju := func(name string, version int, users ...string) {
		GinkgoHelper()
		conn, err := pgx.Connect(ctx, dbURL(name))
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close(ctx) }()
		_, err = conn.Exec(ctx, fmt.Sprintf(sojuSchemaDDL, version))
		Expect(err).NotTo(HaveOccurred())
		for _, u := range users {
			_, err = conn.Exec(ctx, `WITH u AS (INSERT INTO "User" (username, password, nick) VALUES ($1, '$2a$10$hash', $1) RETURNING id),
				n AS (INSERT INTO "Network" (name, "user", addr, nick, sasl_mechanism, sasl_plain_username)
					SELECT 'libera', id, 'ircs://irc.libera.chat', $1, 'PLAIN', $1 FROM u RETURNING id)
				INSERT INTO "Channel" (network, name) SELECT id, c FROM n, unnest(ARRAY['#' || $1, '#soju']) c`, u)
			Expect(err).NotTo(HaveOccurred())
		}
	}
	// contents is what a soju database holds, read through url: schema version, and each user with
	// network and channels, in order.
	contents := func(url string) string {
		GinkgoHelper()
		conn, err := pgx.Connect(ctx, url)
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close(ctx) }()
		var out string
		Expect(conn.QueryRow(ctx, `SELECT (SELECT version FROM "Config")::text || ' ' || coalesce(string_agg(u.username || '@' || n.name || '/' || n.sasl_mechanism || ':' ||
			(SELECT string_agg(c.name, ',' ORDER BY c.name) FROM "Channel" c WHERE c.network = n.id), ' ' ORDER BY u.username), '')
			FROM "User" u JOIN "Network" n ON n."user" = u.id`).Scan(&out)).To(Succeed())
		return out
	}
	// backUp takes a backup of bouncer source as the backup group's Job does: the Job the backup
	// group's builder makes, its main container run on this machine; the Backup gets the status the
	// backup group would give it.
	backUp := func(store *backupv1.BackupStore, source, name string) *backupv1.Backup {
		GinkgoHelper()
		b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceSojuBouncer, Name: source}, Store: "main"}}
		Expect(k8s.Create(ctx, b)).To(Succeed())
		src := bouncer(source)
		Expect(src.Status.DatabaseSecretName).To(Equal(source+"-db"), "a bouncer's database Secret, which its Backup reads")
		akid, sak, ca := jobs.StoreKeys(store)
		in := jobs.Input{Store: store, AccessKeyIDKey: akid, SecretAccessKeyKey: sak, CAKey: ca, SourceSecret: src.Status.DatabaseSecretName,
			ID: jobs.ID(b), OperatorImage: sojuTestOperatorImage, PostgresImage: "docker.io/library/postgres:15"}
		cm, err := jobs.StoreConfigMap(b, in)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Create(ctx, cm)).To(Succeed())
		local, err := jobrun.WithPostgres(k8s, GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		res, err := local.Run(ctx, jobs.Job(b, in))
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(0), res.Output)
		b.Status.Phase, b.Status.ID = backupv1.BackupCompleted, in.ID
		Expect(k8s.Status().Update(ctx, b)).To(Succeed())
		return b
	}
	restoreJob := func(name string) *batchv1.Job {
		GinkgoHelper()
		job := &batchv1.Job{}
		Eventually(get(ctx, job, ns, name+"-restore")).Should(Succeed())
		return job
	}
	runJob := func(job *batchv1.Job) (int, string) {
		GinkgoHelper()
		local, err := jobrun.WithPostgres(k8s, GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		r, err := local.Run(ctx, job)
		Expect(err).NotTo(HaveOccurred())
		return r.ExitCode, r.Output
	}
	// finishJob marks the Job succeeded or failed through the status subresource, as the Job controller
	// (not run by envtest) would.
	finishJob := func(job *batchv1.Job, succeeded bool) {
		GinkgoHelper()
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			j := &batchv1.Job{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
				return err
			}
			now := metav1.Now()
			start := metav1.NewTime(now.Add(-time.Minute))
			j.Status.StartTime = &start
			c := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
				return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: now, LastTransitionTime: now}
			}
			if succeeded {
				j.Status.Succeeded, j.Status.CompletionTime = 1, &now
				j.Status.Conditions = []batchv1.JobCondition{c(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached),
					c(batchv1.JobComplete, batchv1.JobReasonCompletionsReached)}
			} else {
				j.Status.Failed = 1
				j.Status.Conditions = []batchv1.JobCondition{c(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded),
					c(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)}
			}
			return k8s.Status().Update(ctx, j)
		})).To(Succeed())
	}
	restoring := func(name string, src ircv1.RestoreSource) {
		GinkgoHelper()
		b := sojutest.MinimalBouncer(ns, name)
		b.Spec.Restore = &src
		Expect(k8s.Create(ctx, b)).To(Succeed())
	}
	deleteBouncer := func(name string) {
		GinkgoHelper()
		Expect(k8s.Delete(ctx, bouncer(name))).To(Succeed())
		// The garbage collector's part, which envtest does not run: the Deployment deleted in the
		// foreground goes.
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)
			if apierrors.IsNotFound(err) {
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.DeletionTimestamp).NotTo(BeNil())
			d.Finalizers = nil
			g.Expect(k8s.Update(ctx, d)).To(Succeed())
		}).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ircv1.SojuBouncer{}))
		}).Should(BeTrue())
	}

	It("restores a deleted bouncer's users, networks and channels into a new one, and starts soju only once Restored", func() {
		store := readyStore()
		for _, n := range []string{"a", "other"} {
			Expect(k8s.Create(ctx, sojutest.MinimalBouncer(ns, n))).To(Succeed())
			eventually(n, ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady)
		}
		writeSoju("a", 18, "alice", "bob")
		writeSoju("other", 18, "mallory")
		wantA, wantOther := contents(dbURL("a")), contents(dbURL("other"))
		Expect(wantA).To(Equal("18 alice@libera/PLAIN:#alice,#soju bob@libera/PLAIN:#bob,#soju"))
		Expect(wantOther).NotTo(Equal(wantA))
		backUp(store, "a", "a-nightly")
		other := backUp(store, "other", "other-nightly")
		deleteBouncer("a")

		restoring("b", ircv1.RestoreSource{Backup: "a-nightly"})
		eventually("b", backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring)
		job := restoreJob("b")
		Expect(metav1.IsControlledBy(job, bouncer("b"))).To(BeTrue())
		Expect(job.Spec.Template.Spec.Containers[0].Command).To(ContainElements("restore", "--kind", "SojuBouncer", "--name", "a"))
		Expect(job.Spec.Template.Spec.Containers[0].Image).To(Equal("docker.io/library/postgres:15"))
		Expect(job.Spec.Template.Spec.Containers[0].Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.Name", "b-db")),
			"the restore runs as the bouncer's role")
		Expect(noDeployment("b")).To(BeTrue(), "soju's Deployment exists before the restore")
		Expect(bouncer("b").Status.DatabaseSecretName).To(BeEmpty(), "a Backup of the half-restored bouncer could start")
		eventually("b", ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting)
		eventually("b", ircv1.ConditionReady, metav1.ConditionFalse, backupv1.ReasonRestoring)

		code, out := runJob(job)
		Expect(code).To(Equal(0), out)
		Consistently(func() bool { return noDeployment("b") }).WithTimeout(2*time.Second).Should(BeTrue(),
			"the Job's end decides, not the data arriving")
		finishJob(job, true)

		restored := eventually("b", backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored)
		b := bouncer("b")
		Expect(b.Status.RestoredFrom).NotTo(BeNil())
		Expect(b.Status.RestoredFrom.Backup).To(Equal("a-nightly"))
		Expect(b.Status.RestoredFrom.SourceName).To(Equal("a"))
		d := &appsv1.Deployment{}
		Eventually(get(ctx, d, ns, "b")).Should(Succeed())
		Expect(d.CreationTimestamp.Time).NotTo(BeTemporally("<", restored.LastTransitionTime.Time), "soju started before Restored")
		Eventually(func() string { return bouncer("b").Status.DatabaseSecretName }).Should(Equal("b-db"))
		got := contents(dbURL("b"))
		Expect(got).To(Equal(wantA))
		Expect(got).NotTo(Equal(wantOther))
		conn, err := pgx.Connect(ctx, dbURL("b"))
		Expect(err).NotTo(HaveOccurred())
		var owners []string
		rows, err := conn.Query(ctx, `SELECT DISTINCT pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'public' AND c.relkind IN ('r', 'S', 'i')`)
		Expect(err).NotTo(HaveOccurred())
		owners, err = pgx.CollectRows(rows, pgx.RowTo[string])
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.Close(ctx)).To(Succeed())
		Expect(owners).To(Equal([]string{b.Status.DatabaseName}), "soju migrates its schema as the role: the role owns every table")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}))
		}).Should(BeTrue(), "the restore Job goes once restored")

		// A restored bouncer re-reconciled unchanged writes nothing (the Job is gone, the status holds).
		Expect(ergotest.MarkDeploymentAvailable(ctx, k8s, ns, "b")).To(Succeed())
		eventually("b", ircv1.ConditionReady, metav1.ConditionTrue, ircv1.ReasonReady)
		Eventually(func() []string {
			before := writes.In(ns)
			time.Sleep(time.Second)
			return writes.Since(ns, before)
		}).Should(BeEmpty())
		before := writes.In(ns)
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			b := bouncer("b")
			b.Annotations = map[string]string{"example.com/touch": "1"}
			return k8s.Update(ctx, b)
		})).To(Succeed())
		Consistently(func() []string { return writes.Since(ns, before) }).WithTimeout(2 * time.Second).Should(BeEmpty())

		// The control: the other bouncer's artifact, named by store, source and id, gives its rows.
		restoring("c", ircv1.RestoreSource{Store: "main", SourceName: "other", ID: other.Status.ID})
		cJob := restoreJob("c")
		code, out = runJob(cJob)
		Expect(code).To(Equal(0), out)
		finishJob(cJob, true)
		eventually("c", backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored)
		Expect(contents(dbURL("c"))).To(Equal(wantOther))
		Expect(bouncer("c").Status.RestoredFrom.Backup).To(BeEmpty())
	})

	It("refuses a backup of a newer soju schema than the image's: SchemaTooNew, and soju never starts", func() {
		store := readyStore()
		known, ok := soju.SchemaVersion(soju.DefaultImage)
		Expect(ok).To(BeTrue())
		Expect(k8s.Create(ctx, sojutest.MinimalBouncer(ns, "future"))).To(Succeed())
		eventually("future", ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady)
		writeSoju("future", known+1, "carol")
		backUp(store, "future", "future-nightly")

		restoring("now", ircv1.RestoreSource{Backup: "future-nightly"})
		job := restoreJob("now")
		code, out := runJob(job)
		Expect(code).To(Equal(0), out)
		finishJob(job, true)
		c := eventually("now", backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonSchemaTooNew)
		Expect(c.Message).To(ContainSubstring(fmt.Sprintf("version %d", known+1)))
		Expect(c.Message).To(ContainSubstring("refuses a newer schema"))
		eventually("now", ircv1.ConditionReady, metav1.ConditionFalse, backupv1.ReasonSchemaTooNew)
		Consistently(func() bool { return noDeployment("now") }).WithTimeout(3 * time.Second).Should(BeTrue())
		Expect(bouncer("now").Status.RestoredFrom).To(BeNil())
		Consistently(func() string { return cond("now", backupv1.ConditionRestored).Reason }).WithTimeout(2*time.Second).
			Should(Equal(backupv1.ReasonSchemaTooNew), "a refused restore is final")
	})

	It("admits spec.restore only at creation", func() {
		restoring("fixed", ircv1.RestoreSource{Backup: "nope"})
		eventually("fixed", backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonBackupNotFound)
		Expect(noDeployment("fixed")).To(BeTrue())
		b := bouncer("fixed")
		b.Spec.Restore.Backup = "another"
		err := k8s.Update(ctx, b)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.restore cannot change"))
		b = bouncer("fixed")
		b.Spec.Restore = nil
		Expect(apierrors.IsInvalid(k8s.Update(ctx, b))).To(BeTrue())

		// The control: an update that leaves spec.restore alone is admitted; adding it is not.
		Expect(k8s.Create(ctx, sojutest.MinimalBouncer(ns, "plain"))).To(Succeed())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := bouncer("plain")
			p.Spec.Title = "still plain"
			return k8s.Update(ctx, p)
		})).To(Succeed())
		p := bouncer("plain")
		p.Spec.Restore = &ircv1.RestoreSource{Backup: "nope"}
		err = k8s.Update(ctx, p)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(strings.Contains(err.Error(), "cannot be added or removed")).To(BeTrue(), "%v", err)
	})
})
