package irc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/tidwall/buntdb"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/datastore"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup/lastbackuptest"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

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
	bucket := "irc-" + hex.EncodeToString(b)
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

// runLocally runs the Job's container on this machine with the claim's volume at claimDir (jobrun): the
// operator's binary for the image's /manager.
func runLocally(ctx context.Context, job *batchv1.Job, claimDir string) jobrun.Result {
	GinkgoHelper()
	bin := operatorBinary()
	r, err := jobrun.Local{Reader: k8s, Binary: bin, Path: "/usr/bin:/bin", Dir: GinkgoT().TempDir(),
		Volumes: map[string]string{jobs.DatastoreVolume: claimDir}, Commands: map[string]string{jobs.OperatorCommand: bin}}.Run(ctx, job)
	Expect(err).NotTo(HaveOccurred())
	return r
}

// backupNetwork takes a Backup name of network n whose claim is claimDir as the backup group's controller
// (not run here) would: the store ConfigMap and the datastore Job from the kit's builders, the Job's
// container run on this machine on the claim (read-only, as the Job mounts it), then the Backup's status
// Completed with the artifact's id.
func backupNetwork(ctx context.Context, store *backupv1.BackupStore, n *ircv1.ErgoNetwork, name, claimDir string) *backupv1.Backup {
	GinkgoHelper()
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: name},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: n.Name}, Store: store.Name}}
	Expect(k8s.Create(ctx, b)).To(Succeed())
	akid, sak, ca := jobs.StoreKeys(store)
	in := jobs.DatastoreInput{Store: store, AccessKeyIDKey: akid, SecretAccessKeyKey: sak, CAKey: ca, ID: jobs.ID(b),
		OperatorImage: testOperatorImage, ClaimName: ergo.PVCName(n), DataDir: ergo.DataDir, DataFile: ergo.DatastoreFile,
		PodSelector: ergo.SelectorLabels(n), RunAsUser: ergo.DatastoreUser(false), Format: backup.FormatBuntDB}
	cm, err := jobs.StoreConfigMap(b, jobs.Input{Store: store})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, cm)).To(Succeed())
	Expect(os.Chmod(claimDir, 0o500)).To(Succeed())
	r := runLocally(ctx, jobs.DatastoreJob(b, in), claimDir)
	Expect(os.Chmod(claimDir, 0o700)).To(Succeed())
	Expect(r.ExitCode).To(BeZero(), r.Output)
	now := metav1.Now()
	b.Status.Phase, b.Status.ID, b.Status.CompletionTime, b.Status.Format = backupv1.BackupCompleted, in.ID, &now, string(backup.FormatBuntDB)
	Expect(k8s.Status().Update(ctx, b)).To(Succeed())
	return b
}

// claimWith is a directory standing for a claim, holding an ircd.db with ergo's keys written from f.
func claimWith(f datastore.Fixture) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	_, err := datastore.WriteFixture(filepath.Join(dir, ergo.DatastoreFile), f)
	Expect(err).NotTo(HaveOccurred())
	return dir
}

// ergoContent is what a datastore holds: its accounts' names and registered channels' names, read with
// buntdb as ergo reads its keys.
type ergoContent struct{ accounts, channels []string }

func readErgoContent(path string) ergoContent {
	GinkgoHelper()
	db, err := buntdb.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = db.Close() }()
	var c ergoContent
	Expect(db.View(func(tx *buntdb.Tx) error {
		if err := tx.AscendKeys(datastore.AccountExistsPrefix+"*", func(key, _ string) bool {
			name, err := tx.Get("account.name " + strings.TrimPrefix(key, datastore.AccountExistsPrefix))
			Expect(err).NotTo(HaveOccurred())
			c.accounts = append(c.accounts, name)
			return true
		}); err != nil {
			return err
		}
		return tx.AscendKeys(datastore.ChannelPrefix+"*", func(_, value string) bool {
			var reg struct{ Name string }
			Expect(json.Unmarshal([]byte(value), &reg)).To(Succeed())
			c.channels = append(c.channels, reg.Name)
			return true
		})
	})).To(Succeed())
	return c
}

// restoringNetwork creates a minimal network name in ns restored from src.
func restoringNetwork(ctx context.Context, ns, name string, src ircv1.RestoreSource) *ircv1.ErgoNetwork {
	GinkgoHelper()
	n := ergotest.MinimalNetwork(ns, name)
	n.Spec.Restore = &src
	Expect(k8s.Create(ctx, n)).To(Succeed())
	return n
}

// restoreJobOf waits for the network's restore Job.
func restoreJobOf(ctx context.Context, ns, name string) *batchv1.Job {
	GinkgoHelper()
	job := &batchv1.Job{}
	Eventually(get(ctx, job, ns, jobs.DatastoreRestoreName(name))).Should(Succeed())
	return job
}

// noDeployment says the network's Deployment does not exist now, nor for a while.
func noDeployment(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Consistently(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &appsv1.Deployment{}))
	}, 2*time.Second).Should(BeTrue(), "ergo's Deployment exists before the restore succeeded")
}

// endedPod makes a pod of job whose container ended with code and message, as the kubelet reports it.
func endedPod(ctx context.Context, job *batchv1.Job, container string, code int32, message string) {
	GinkgoHelper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, GenerateName: job.Name + "-",
		Labels: map[string]string{batchv1.JobNameLabel: job.Name}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: container, Image: "x"}}}}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Image: "x", ImageID: "x",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: message}}}}
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
}

// eventReasons are the reasons of the events about object name in ns, of type t.
func eventReasons(ctx context.Context, ns, name, t string) []string {
	GinkgoHelper()
	var events corev1.EventList
	Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Type == t {
			out = append(out, e.Reason)
		}
	}
	return out
}

var _ = Describe("ErgoNetwork restore", func() {
	chatFixture := datastore.Fixture{Accounts: []string{"Alice", "bob", "carol", "dave"}, Unregistered: []string{"dave"},
		Channels: []string{"#ops", "#lobby", "#old"}, DroppedChannels: []string{"#old"}}
	sideFixture := datastore.Fixture{Accounts: []string{"zed"}, Channels: []string{"#side"}}

	It("fills a new network's claim with a deleted network's backup before ergo starts: its accounts and channels, and another network's backup gives that network's", func(ctx SpecContext) {
		ns := newNamespace()
		store := readyBackupStore(ctx, ns)
		src := ergotest.MinimalNetwork(ns, "chat")
		Expect(k8s.Create(ctx, src)).To(Succeed())
		b := backupNetwork(ctx, store, src, "chat-now", claimWith(chatFixture))
		side := ergotest.MinimalNetwork(ns, "side")
		Expect(k8s.Create(ctx, side)).To(Succeed())
		sideBackup := backupNetwork(ctx, store, side, "side-now", claimWith(sideFixture))
		// The source network goes (its claim with it): the Backup and the artifact stay.
		Expect(k8s.Delete(ctx, src)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(src), &ircv1.ErgoNetwork{}))
		}).Should(BeTrue())

		n := restoringNetwork(ctx, ns, "chat2", ircv1.RestoreSource{Backup: "chat-now"})
		job := restoreJobOf(ctx, ns, "chat2")
		eventuallyNetwork(ctx, ns, "chat2", haveCondition(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring))
		eventuallyNetwork(ctx, ns, "chat2", haveCondition(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting))
		got := eventuallyNetwork(ctx, ns, "chat2", haveCondition(ircv1.ConditionReady, metav1.ConditionFalse, backupv1.ReasonRestoring))
		Expect(got.Status.RestoredFrom).To(BeNil())
		// The claim is made; the Job, in the operator's image as ergo's user, writes into it.
		Expect(get(ctx, &corev1.PersistentVolumeClaim{}, ns, ergo.PVCName(n))()).To(Succeed())
		pod := job.Spec.Template.Spec
		Expect(pod.Containers[0].Image).To(Equal(testOperatorImage))
		Expect(pod.Containers[0].Command).To(ContainElements("/manager", "restore", "--target-file", "/ircd/ircd.db", "--name", "chat", "--id", b.Status.ID))
		Expect(pod.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal(ergo.PVCName(n)))
		Expect(pod.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeFalse())
		Expect(pod.SecurityContext.RunAsUser).To(Equal(ergo.DatastoreUser(false)))
		Expect(pod.SecurityContext.FSGroup).To(Equal(ergo.DatastoreUser(false)))
		Expect(metav1.IsControlledBy(job, got)).To(BeTrue())
		noDeployment(ctx, ns, "chat2")

		claim := GinkgoT().TempDir()
		r := runLocally(ctx, job, claim)
		Expect(r.ExitCode).To(BeZero(), r.Output)
		Expect(r.Termination).To(ContainSubstring(`"result":"Restored"`))
		Expect(r.Output).NotTo(ContainSubstring(s3.SecretAccessKey))
		noDeployment(ctx, ns, "chat2") // the Job has not completed yet
		Expect(testutil.FinishJob(ctx, k8s, job, true, "", "")).To(Succeed())

		got = eventuallyNetwork(ctx, ns, "chat2", haveCondition(backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored))
		Expect(got.Status.RestoredFrom).NotTo(BeNil())
		from := got.Status.RestoredFrom
		Expect([]string{from.Backup, from.Store, from.SourceName, from.ID}).To(Equal([]string{"chat-now", "main", "chat", b.Status.ID}))
		Expect(from.Time.IsZero()).To(BeFalse())
		Eventually(get(ctx, &appsv1.Deployment{}, ns, "chat2")).Should(Succeed())
		Eventually(func() []string { return eventReasons(ctx, ns, "chat2", corev1.EventTypeNormal) }).Should(ContainElement(backupv1.ReasonRestored))
		// The Job goes once the status says restored.
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}))
		}).Should(BeTrue())
		markDeploymentAvailable(ctx, ns, "chat2")
		markClaimBound(ctx, ns, ergo.PVCName(n))
		eventuallyNetwork(ctx, ns, "chat2", haveCondition(ircv1.ConditionReady, metav1.ConditionTrue, ircv1.ReasonReady))

		// The claim holds the backed-up datastore: ergo's accounts and channels, read with buntdb.
		content := readErgoContent(filepath.Join(claim, ergo.DatastoreFile))
		Expect(content.accounts).To(ConsistOf("Alice", "bob", "carol"))
		Expect(content.channels).To(ConsistOf("#ops", "#lobby"))
		entries, err := os.ReadDir(claim)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(HaveLen(1), "the restore left a temporary file in the claim")

		// The control: the other network's artifact, named by store, source and id, restores the other
		// network's datastore.
		restoringNetwork(ctx, ns, "side2", ircv1.RestoreSource{Store: "main", SourceName: "side", ID: sideBackup.Status.ID})
		sideJob := restoreJobOf(ctx, ns, "side2")
		sideClaim := GinkgoT().TempDir()
		Expect(runLocally(ctx, sideJob, sideClaim).ExitCode).To(BeZero())
		Expect(testutil.FinishJob(ctx, k8s, sideJob, true, "", "")).To(Succeed())
		got = eventuallyNetwork(ctx, ns, "side2", haveCondition(backupv1.ConditionRestored, metav1.ConditionTrue, backupv1.ReasonRestored))
		Expect(got.Status.RestoredFrom.Backup).To(BeEmpty())
		Expect(got.Status.RestoredFrom.SourceName).To(Equal("side"))
		sideContent := readErgoContent(filepath.Join(sideClaim, ergo.DatastoreFile))
		Expect(sideContent).To(Equal(ergoContent{accounts: []string{"zed"}, channels: []string{"#side"}}))
		Expect(sideContent).NotTo(Equal(content))
	})

	It("never writes over a datastore already in the claim: TargetNotEmpty, final, the file unchanged, ergo not started", func(ctx SpecContext) {
		ns := newNamespace()
		store := readyBackupStore(ctx, ns)
		src := ergotest.MinimalNetwork(ns, "chat")
		Expect(k8s.Create(ctx, src)).To(Succeed())
		backupNetwork(ctx, store, src, "chat-now", claimWith(chatFixture))

		restoringNetwork(ctx, ns, "kept", ircv1.RestoreSource{Backup: "chat-now"})
		job := restoreJobOf(ctx, ns, "kept")
		// A claim kept from an earlier network, holding its datastore.
		claim := claimWith(sideFixture)
		before, err := os.ReadFile(filepath.Join(claim, ergo.DatastoreFile))
		Expect(err).NotTo(HaveOccurred())
		r := runLocally(ctx, job, claim)
		Expect(r.ExitCode).To(Equal(1), r.Output)
		var res backup.VerifyResult
		Expect(json.Unmarshal([]byte(r.Termination), &res)).To(Succeed())
		Expect(res.Reason).To(Equal(backup.ReasonTargetNotEmpty))
		endedPod(ctx, job, jobs.ContainerRestore, 1, r.Termination)
		Expect(testutil.FinishJob(ctx, k8s, job, false, batchv1.JobReasonBackoffLimitExceeded, "failed")).To(Succeed())

		got := eventuallyNetwork(ctx, ns, "kept", haveCondition(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonTargetNotEmpty))
		Expect(condition(got, backupv1.ConditionRestored).Message).To(ContainSubstring("already holds a datastore"))
		Expect(condition(got, ircv1.ConditionReady).Reason).To(Equal(backupv1.ReasonTargetNotEmpty))
		Expect(got.Status.RestoredFrom).To(BeNil())
		after, err := os.ReadFile(filepath.Join(claim, ergo.DatastoreFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(Equal(before))
		Expect(readErgoContent(filepath.Join(claim, ergo.DatastoreFile)).accounts).To(ConsistOf("zed"))
		Eventually(func() []string { return eventReasons(ctx, ns, "kept", corev1.EventTypeWarning) }).Should(ContainElement(backupv1.ReasonTargetNotEmpty))
		// Final: no new Job, no Deployment, the condition kept through later reconciles.
		update(ctx, ns, "kept", func(n *ircv1.ErgoNetwork) { n.Spec.NetworkName = "Bumped" })
		eventuallyNetwork(ctx, ns, "kept", func(n *ircv1.ErgoNetwork) error {
			if n.Status.ObservedGeneration != n.Generation {
				return errors.New("the bumped spec is not reconciled yet")
			}
			return haveCondition(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonTargetNotEmpty)(n)
		})
		noDeployment(ctx, ns, "kept")
	})

	It("waits for a Backup that is not Completed, and refuses one of another kind for good", func(ctx SpecContext) {
		ns := newNamespace()
		readyBackupStore(ctx, ns)
		running := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: "chat"}, Store: "main"}}
		Expect(k8s.Create(ctx, running)).To(Succeed())
		restoringNetwork(ctx, ns, "waiting", ircv1.RestoreSource{Backup: "later"})
		eventuallyNetwork(ctx, ns, "waiting", haveCondition(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonBackupNotCompleted))
		noDeployment(ctx, ns, "waiting")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.DatastoreRestoreName("waiting")}, &batchv1.Job{}))).To(BeTrue())

		pg := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "app"}, Store: "main"}}
		Expect(k8s.Create(ctx, pg)).To(Succeed())
		restoringNetwork(ctx, ns, "wrong", ircv1.RestoreSource{Backup: "db"})
		eventuallyNetwork(ctx, ns, "wrong", haveCondition(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonWrongKind))
		noDeployment(ctx, ns, "wrong")
	})

	It("never restores into a network that already runs: spec.restore added later is TargetNotEmpty and ergo keeps running", func(ctx SpecContext) {
		ns := newNamespace()
		readyBackupStore(ctx, ns)
		Expect(k8s.Create(ctx, ergotest.MinimalNetwork(ns, "live"))).To(Succeed())
		Eventually(get(ctx, &appsv1.Deployment{}, ns, "live")).Should(Succeed())
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &ircv1.ErgoNetwork{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "live"}, n); err != nil {
				return err
			}
			n.Spec.Restore = &ircv1.RestoreSource{Backup: "anything"}
			return k8s.Update(ctx, n)
		})
		if err != nil {
			// The API server refuses it: nothing more to check.
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			return
		}
		eventuallyNetwork(ctx, ns, "live", haveCondition(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonTargetNotEmpty))
		Consistently(get(ctx, &appsv1.Deployment{}, ns, "live"), 2*time.Second).Should(Succeed())
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.DatastoreRestoreName("live")}, &batchv1.Job{}))).To(BeTrue())
	})
})

// No backup controller runs here: the scenario writes the Backups' statuses itself.
var _ = Describe("ErgoNetwork last backup", func() {
	It("shows its newest Completed Backup, not a Failed or Running one, nor another namespace's or kind's", func(ctx SpecContext) {
		ns := newNamespace()
		n := ergotest.MinimalNetwork(ns, "chat")
		Expect(k8s.Create(ctx, n)).To(Succeed())
		lastbackuptest.Run(ctx, k8s, lastbackuptest.Source{Object: n, OtherKind: backupv1.SourceSojuBouncer, OtherNamespace: newNamespace(),
			Bump: func(ctx context.Context) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cur := &ircv1.ErgoNetwork{}
					if err := k8s.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
						return err
					}
					if cur.Spec.NetworkName == "A" {
						cur.Spec.NetworkName = "B"
					} else {
						cur.Spec.NetworkName = "A"
					}
					return k8s.Update(ctx, cur)
				})
			}})
	})
})

// An operator installed without its backup CRDs: the ErgoNetwork controller watches no Backup, a network
// asking for a restore says why it cannot have one and ergo does not start on its empty claim, and a
// network without spec.restore runs as before and shows no last backup.
var _ = Describe("ErgoNetwork restore on a cluster without the backup API", Ordered, func() {
	var (
		ctx context.Context
		c   client.Client
		ns  string
	)
	BeforeAll(func() {
		env, err := testenv.Start(testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		// Cleanups run last-registered first: the manager stops before its API server does.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(suiteCtx)
		DeferCleanup(cancel)
		c = env.Client
		lastbackuptest.RemoveBackupAPI(ctx, c, env.Config)
		caps, err := env.Discover()
		Expect(err).NotTo(HaveOccurred())
		Expect(caps.Backups).To(BeFalse())
		r := &ErgoNetworkReconciler{Image: "registry.example/ergo:test", OperatorImage: testOperatorImage}
		testenv.RunManager(ctx, env.Config, testenv.ManagerOptions(&testutil.WriteCounter{}), caps, groupOf(ergoNetworks(r)))
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nobackup-"}}
		Expect(c.Create(ctx, n)).To(Succeed())
		ns = n.Name
	})

	It("reports APINotAvailable and holds ergo for a network with spec.restore; runs one without", func() {
		n := ergotest.MinimalNetwork(ns, "restored")
		n.Spec.Restore = &ircv1.RestoreSource{Backup: "nightly"}
		Expect(c.Create(ctx, n)).To(Succeed())
		plain := ergotest.MinimalNetwork(ns, "plain")
		Expect(c.Create(ctx, plain)).To(Succeed())

		Eventually(func(g Gomega) {
			got := &ircv1.ErgoNetwork{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(n), got)).To(Succeed())
			restored := condition(got, backupv1.ConditionRestored)
			g.Expect(restored).NotTo(BeNil())
			g.Expect(restored.Reason).To(Equal(ircv1.ReasonAPINotAvailable))
			g.Expect(restored.Message).To(ContainSubstring("backup.josie.cloud"))
			g.Expect(condition(got, ircv1.ConditionReady).Reason).To(Equal(ircv1.ReasonAPINotAvailable))
		}).Should(Succeed())
		Eventually(func() error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, &appsv1.Deployment{}) }).Should(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored"}, &appsv1.Deployment{}))
		}, 2*time.Second).Should(BeTrue())
		got := &ircv1.ErgoNetwork{}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(plain), got)).To(Succeed())
		Expect(condition(got, backupv1.ConditionRestored)).To(BeNil())
		Expect(got.Status.LastBackupTime).To(BeNil())
		Expect(got.Status.LastBackup).To(BeEmpty())
	})
})
