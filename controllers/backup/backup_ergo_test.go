package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/tidwall/buntdb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/datastore"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/testutil/jobrun"
)

// testErgoImage is the ergo image of the suite's ergo pods.
const testErgoImage = "ghcr.io/ergochat/ergo:v2.19.1"

// createErgoNetwork makes an ErgoNetwork (no irc controller runs in this suite: it gets no children).
func createErgoNetwork(ctx context.Context, ns, name string) *ircv1.ErgoNetwork {
	GinkgoHelper()
	n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ircv1.ErgoNetworkSpec{Hostname: name + ".irc.test", Listeners: []ircv1.Listener{{Address: ":6667"}}}}
	Expect(k8s.Create(ctx, n)).To(Succeed())
	return n
}

// readyErgoNetwork gives the network, through the status subresource, the Ready condition the irc
// controller would.
func readyErgoNetwork(ctx context.Context, n *ircv1.ErgoNetwork) {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
	n.Status.Conditions = []metav1.Condition{{Type: ircv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "test", LastTransitionTime: metav1.Now(), ObservedGeneration: n.Generation}}
	Expect(k8s.Status().Update(ctx, n)).To(Succeed())
}

// runningErgoPod makes the pod the network's Deployment would run, with ergo's selector labels and claim,
// and reports it Running through the status subresource, as the kubelet would.
func runningErgoPod(ctx context.Context, n *ircv1.ErgoNetwork) {
	GinkgoHelper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, GenerateName: n.Name + "-", Labels: ergo.SelectorLabels(n)},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: ergo.ContainerName, Image: testErgoImage}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ergo.PVCName(n)}}}}}}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
}

// createErgoBackup makes a Backup of the ErgoNetwork source to the store "main".
func createErgoBackup(ctx context.Context, ns, name, network string) *backupv1.Backup {
	GinkgoHelper()
	b := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: network}, Store: "main"}}
	Expect(k8s.Create(ctx, b)).To(Succeed())
	return b
}

// runDatastoreJobLocally runs the Job's container on this machine with the claim's volume at claimDir
// (jobrun): the operator's binary for the image's /manager. The claim's directory and file are made
// read-only first, as the Job mounts the claim.
func runDatastoreJobLocally(ctx context.Context, job *batchv1.Job, claimDir string) {
	GinkgoHelper()
	Expect(os.Chmod(filepath.Join(claimDir, ergo.DatastoreFile), 0o400)).To(Succeed())
	Expect(os.Chmod(claimDir, 0o500)).To(Succeed())
	DeferCleanup(func() { _ = os.Chmod(claimDir, 0o700) })
	bin := operatorBinary()
	r, err := jobrun.Local{Reader: k8s, Binary: bin, Path: "/usr/bin:/bin", Dir: GinkgoT().TempDir(),
		Volumes: map[string]string{jobs.DatastoreVolume: claimDir}, Commands: map[string]string{jobs.OperatorCommand: bin}}.Run(ctx, job)
	Expect(err).NotTo(HaveOccurred())
	Expect(r.ExitCode).To(BeZero(), r.Output)
}

// ergoContent is what a datastore holds: its registered accounts' names and channels' names, sorted, read
// with buntdb as ergo reads its keys.
type ergoContent struct{ accounts, channels []string }

// readErgoContent opens path with buntdb and lists the accounts (account.name keys of live accounts) and
// channels (the channels table's registrations).
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

// backupErgo takes a Backup of a Ready network with a running pod whose claim holds fixture, and returns
// the Completed Backup and the fixture's counts.
func backupErgo(ctx context.Context, ns, network, name string, fixture datastore.Fixture) (*backupv1.Backup, datastore.Counts) {
	GinkgoHelper()
	n := createErgoNetwork(ctx, ns, network)
	readyErgoNetwork(ctx, n)
	runningErgoPod(ctx, n)
	claim := GinkgoT().TempDir()
	want, err := datastore.WriteFixture(filepath.Join(claim, ergo.DatastoreFile), fixture)
	Expect(err).NotTo(HaveOccurred())
	b := createErgoBackup(ctx, ns, name, network)
	job := awaitJob(ctx, b)
	runDatastoreJobLocally(ctx, job, claim)
	finishJob(ctx, job, true)
	return backupPhase(ctx, b, backupv1.BackupCompleted), want
}

// downloadErgo gets the Backup's artifact from the store (checksum checked) into a file of its own.
func downloadErgo(ctx context.Context, bucket string, b *backupv1.Backup) (string, backup.Manifest) {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "ircd.db")
	f, err := os.Create(path)
	Expect(err).NotTo(HaveOccurred())
	ref := backup.Ref{Namespace: b.Namespace, Kind: "ErgoNetwork", Name: b.Spec.Source.Name, ID: b.Status.ID}
	m, err := repository(ctx, bucket, b.Namespace).Get(ctx, ref, f)
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Close()).To(Succeed())
	return path, m
}

var _ = Describe("Backup of an ErgoNetwork", func() {
	It("waits for a Ready network with a running ergo pod, then runs the operator's image next to that pod, reading the claim as ergo's user", func(ctx SpecContext) {
		ns := newNamespace("backup-ergo-wait")
		readyStore(ns)
		// Hostile first: no network → SourceMissing, no Job.
		b := createErgoBackup(ctx, ns, "chat-now", "chat")
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return conditionReason(b, backupv1.ConditionSource)
		}).Should(Equal(backupv1.ReasonSourceMissing))
		// The network, not Ready: SourceNotReady.
		n := createErgoNetwork(ctx, ns, "chat")
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return conditionMessage(b, backupv1.ConditionSource)
		}).Should(ContainSubstring("is not Ready"))
		Expect(conditionReason(b, backupv1.ConditionSource)).To(Equal(backupv1.ReasonSourceNotReady))
		// Ready, but no running pod (scaled away, or between two pods): still SourceNotReady, no Job.
		readyErgoNetwork(ctx, n)
		Eventually(func(g Gomega) string {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
			return conditionMessage(b, backupv1.ConditionSource)
		}).Should(ContainSubstring("has no running ergo pod"))
		Expect(conditionReason(b, backupv1.ConditionSource)).To(Equal(backupv1.ReasonSourceNotReady))
		Expect(b.Status.Phase).To(Equal(backupv1.BackupPending))
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobs.Name(b)}, &batchv1.Job{}))
		}).Should(BeTrue())

		// The pod runs (the wait above re-checks each minute; the store's or the network's change wakes it).
		runningErgoPod(ctx, n)
		readyErgoNetwork(ctx, n)
		job := awaitJob(ctx, b)
		pod := job.Spec.Template.Spec
		Expect(pod.InitContainers).To(BeEmpty())
		Expect(pod.Containers).To(HaveLen(1))
		Expect(pod.Containers[0].Image).To(Equal(testOptions.OperatorImage))
		Expect(pod.Containers[0].Command).To(ContainElements("/manager", "--format", "buntdb", "--file", "/ircd/ircd.db", "--tool-version", testErgoImage))
		term := pod.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		Expect(term).To(HaveLen(1))
		Expect(term[0].LabelSelector.MatchLabels).To(Equal(ergo.SelectorLabels(n)))
		Expect(term[0].TopologyKey).To(Equal("kubernetes.io/hostname"))
		Expect(pod.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal(ergo.PVCName(n)))
		Expect(pod.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeTrue())
		// envtest is not OpenShift: ergo's own uid, as its Deployment runs it.
		Expect(pod.SecurityContext.RunAsUser).To(Equal(ergo.DatastoreUser(false)))
		Expect(*pod.SecurityContext.RunAsUser).To(BeEquivalentTo(65532))
		backupPhase(ctx, b, backupv1.BackupRunning)
		Expect(b.Status.Format).To(Equal("buntdb"))
		Expect(b.Status.ID).To(Equal(jobs.ID(b)))
	})

	It("copies ircd.db to the store: Completed with the store's size and sha256, format buntdb, and the artifact holds the fixture's accounts and channels", func(ctx SpecContext) {
		ns := newNamespace("backup-ergo")
		bucket := readyStore(ns)
		fixture := datastore.Fixture{Accounts: []string{"Alice", "bob", "carol", "dave"}, Unregistered: []string{"dave"},
			PendingAccounts: []string{"erin"}, Channels: []string{"#ops", "#lobby", "#old"}, DroppedChannels: []string{"#old"}}
		b, want := backupErgo(ctx, ns, "chat", "chat-now", fixture)
		Expect(want.Accounts).To(Equal(3))
		Expect(want.Channels).To(Equal(2))

		m, err := repository(ctx, bucket, ns).Manifest(ctx, backup.Ref{Namespace: ns, Kind: "ErgoNetwork", Name: "chat", ID: b.Status.ID})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Status.Format).To(Equal("buntdb"))
		Expect(b.Status.Size).To(Equal(m.Size))
		Expect(b.Status.Size).To(BeNumerically(">", 0))
		Expect(b.Status.SHA256).To(Equal(m.SHA256))
		Expect(b.Status.ToolVersion).To(Equal(testErgoImage))
		Expect(b.Status.Location).To(Equal(fmt.Sprintf("s3://%s/prod/%s/ErgoNetwork/chat/%s/data", bucket, ns, b.Status.ID)))
		Expect(m.Facts).To(HaveKeyWithValue(datastore.FactAccounts, "3"))
		Expect(m.Facts).To(HaveKeyWithValue(datastore.FactChannels, "2"))
		Expect(m.Facts).To(HaveKeyWithValue(datastore.FactPendingAccounts, "1"))
		Expect(eventsText(ns)).NotTo(ContainSubstring(s3.SecretAccessKey))

		// The artifact, downloaded with its checksum checked and opened with buntdb as ergo opens it.
		path, got := downloadErgo(ctx, bucket, b)
		Expect(got.SHA256).To(Equal(b.Status.SHA256))
		counts, err := datastore.CountDB(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(counts).To(Equal(want))
		content := readErgoContent(path)
		Expect(content.accounts).To(ConsistOf("Alice", "bob", "carol", "erin"))
		Expect(content.channels).To(ConsistOf("#ops", "#lobby"))

		// Control: another network's datastore, backed up the same way, holds its own content, not this one's.
		other, otherWant := backupErgo(ctx, ns, "side", "side-now", datastore.Fixture{Accounts: []string{"zed"}, Channels: []string{"#side"}})
		otherPath, _ := downloadErgo(ctx, bucket, other)
		otherCounts, err := datastore.CountDB(otherPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(otherCounts).To(Equal(otherWant))
		Expect(otherCounts).NotTo(Equal(counts))
		Expect(readErgoContent(otherPath)).To(Equal(ergoContent{accounts: []string{"zed"}, channels: []string{"#side"}}))
		Expect(other.Status.SHA256).NotTo(Equal(b.Status.SHA256))
	})

	It("is a kind the API server accepts now, while a kind nothing backs up is refused", func(ctx SpecContext) {
		ns := newNamespace("backup-ergo-kind")
		ok := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: "chat"}, Store: "main"}}
		Expect(k8s.Create(ctx, ok)).To(Succeed())
		sched := &backupv1.BackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
			Spec: backupv1.BackupScheduleSpec{Schedule: "0 3 * * *", Suspend: true, Source: backupv1.BackupSource{Kind: backupv1.SourceErgoNetwork, Name: "chat"}, Store: "main"}}
		Expect(k8s.Create(ctx, sched)).To(Succeed())
		// Control: the enum still refuses a kind outside it.
		bad := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: "SojuNetwork", Name: "chat"}, Store: "main"}}
		err := k8s.Create(ctx, bad)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.source.kind"))
	})
})

// conditionMessage is the message of the Backup's condition t as last read.
func conditionMessage(b *backupv1.Backup, t string) string {
	for _, c := range b.Status.Conditions {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}
