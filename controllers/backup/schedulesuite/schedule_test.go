package schedulesuite

import (
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// quiet is how long a Consistently watches for a Backup that must not be made.
const quiet = 3 * time.Second

// poke changes an annotation of the schedule, which reconciles it (the suite's clock does not move by
// itself, so RequeueAfter would never come).
func poke(s *backupv1.BackupSchedule) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var live backupv1.BackupSchedule
		g.Expect(k8s.Get(suiteCtx, client.ObjectKeyFromObject(s), &live)).To(Succeed())
		if live.Annotations == nil {
			live.Annotations = map[string]string{}
		}
		n, _ := strconv.Atoi(live.Annotations["test/poke"])
		live.Annotations["test/poke"] = strconv.Itoa(n + 1)
		g.Expect(k8s.Update(suiteCtx, &live)).To(Succeed())
	}).Should(Succeed())
}

// latest0300 is the latest 03:00 UTC at or before t.
func latest0300(t time.Time) time.Time {
	t = t.UTC()
	d := time.Date(t.Year(), t.Month(), t.Day(), 3, 0, 0, 0, time.UTC)
	if d.After(t) {
		d = d.AddDate(0, 0, -1)
	}
	return d
}

func scheduleStatus(g Gomega, s *backupv1.BackupSchedule) backupv1.BackupScheduleStatus {
	var live backupv1.BackupSchedule
	g.Expect(k8s.Get(suiteCtx, client.ObjectKeyFromObject(s), &live)).To(Succeed())
	return live.Status
}

func names(m map[string]backupv1.Backup) []string {
	out := []string{}
	for n := range m {
		out = append(out, n)
	}
	return out
}

// The specs share one fake clock, so they run one after the other.
var _ = Describe("BackupSchedule", Serial, func() {
	It("makes no Backup before its first run", func() {
		ns := newNamespace("sched-notdue")
		readyStoreAndSource(ns, "store", "db")
		clock.Set(time.Now())
		s := newSchedule(ns, "nightly", "store", "db", "@every 1h")
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())
		Eventually(func(g Gomega) {
			st := scheduleStatus(g, s)
			g.Expect(meta.IsStatusConditionTrue(st.Conditions, "Ready")).To(BeTrue(), "%v", st.Conditions)
			g.Expect(st.ObservedGeneration).To(Equal(int64(1)))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(backupsOf(g, ns)).To(BeEmpty()) }).WithTimeout(quiet).Should(Succeed())
		Expect(scheduleStatus(Default, s).LastScheduleTime).To(BeNil())
	})

	It("makes one Backup when due, none while it runs, the next once it finished, and reports a failure", func() {
		ns := newNamespace("sched-due")
		readyStoreAndSource(ns, "store", "db")
		now := time.Now().Add(48 * time.Hour)
		clock.Set(now)
		s := newSchedule(ns, "nightly", "store", "db", "0 3 * * *")
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())

		By("two days of missed runs: one Backup, for the latest run")
		run := latest0300(now)
		first := "nightly-" + run.Format("20060102150405")
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(first)) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(first)) }).WithTimeout(quiet).Should(Succeed())
		b := backupsOf(Default, ns)[first]
		Expect(b.Labels).To(Equal(map[string]string{
			backupv1.LabelSchedule: "nightly", backupv1.LabelSourceKind: "PostgresDatabase", backupv1.LabelSourceName: "db",
			oplabels.ManagedByLabel: oplabels.OperatorName,
		}))
		Expect(b.OwnerReferences).To(BeEmpty(), "a Backup outlives its schedule")
		Expect(b.Spec).To(Equal(backupv1.BackupSpec{Source: s.Spec.Source, Store: "store",
			ArtifactPolicy: backupv1.ArtifactDelete}))
		Eventually(func(g Gomega) {
			st := scheduleStatus(g, s)
			g.Expect(st.LastScheduleTime).NotTo(BeNil())
			g.Expect(st.LastScheduleTime.UTC()).To(Equal(run))
		}).Should(Succeed())

		By("the Backup runs and two more days pass: still one")
		finish(ns, first, backupv1.BackupRunning, now)
		now = now.Add(48 * time.Hour)
		clock.Set(now)
		poke(s)
		Consistently(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(first)) }).WithTimeout(quiet).Should(Succeed())

		By("it completes: the next Backup is made at once, for the latest run")
		finish(ns, first, backupv1.BackupCompleted, now.Add(-47*time.Hour))
		second := "nightly-" + latest0300(now).Format("20060102150405")
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(first, second)) }).Should(Succeed())
		Eventually(func(g Gomega) {
			st := scheduleStatus(g, s)
			g.Expect(st.LastSuccessfulBackup).To(Equal(first))
			g.Expect(st.LastSuccessTime).NotTo(BeNil())
			g.Expect(meta.IsStatusConditionTrue(st.Conditions, "Ready")).To(BeTrue())
		}).Should(Succeed())

		By("the second fails: Ready is False and names it")
		finish(ns, second, backupv1.BackupFailed, now)
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(scheduleStatus(g, s).Conditions, "Ready")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(backupv1.ReasonJobFailed))
			g.Expect(c.Message).To(ContainSubstring(second))
		}).Should(Succeed())
	})

	It("makes no Backup while suspended or while its store is missing", func() {
		ns := newNamespace("sched-wait")
		readyStoreAndSource(ns, "store", "db")
		clock.Set(time.Now().Add(48 * time.Hour))
		s := newSchedule(ns, "nightly", "other-store", "db", "0 3 * * *")
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(scheduleStatus(g, s).Conditions, "Ready")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(backupv1.ReasonStoreNotReady))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(backupsOf(g, ns)).To(BeEmpty()) }).WithTimeout(quiet).Should(Succeed())

		By("the store named, but suspended")
		Eventually(func(g Gomega) {
			var live backupv1.BackupSchedule
			g.Expect(k8s.Get(suiteCtx, client.ObjectKeyFromObject(s), &live)).To(Succeed())
			live.Spec.Store, live.Spec.Suspend = "store", true
			g.Expect(k8s.Update(suiteCtx, &live)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(scheduleStatus(g, s).Conditions, "Ready")).To(BeTrue())
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(backupsOf(g, ns)).To(BeEmpty()) }).WithTimeout(quiet).Should(Succeed())

		By("control: resumed, the missed run is taken")
		Eventually(func(g Gomega) {
			var live backupv1.BackupSchedule
			g.Expect(k8s.Get(suiteCtx, client.ObjectKeyFromObject(s), &live)).To(Succeed())
			live.Spec.Suspend = false
			g.Expect(k8s.Update(suiteCtx, &live)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(backupsOf(g, ns)).To(HaveLen(1)) }).Should(Succeed())
	})

	It("waits for a source made after it, and takes the missed run once the source appears (not at the 10-minute recheck)", func() {
		ns := newNamespace("sched-late")
		readyStoreAndSource(ns, "store", "db")
		clock.Set(time.Now().Add(48 * time.Hour))
		s := newSchedule(ns, "nightly", "store", "late", "0 3 * * *")
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(scheduleStatus(g, s).Conditions, backupv1.ConditionSource)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(backupv1.ReasonSourceMissing))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(backupsOf(g, ns)).To(BeEmpty()) }).WithTimeout(quiet).Should(Succeed())

		By("the source made: the schedule hears of it and takes the run it missed")
		Expect(k8s.Create(suiteCtx, &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"},
			Spec: homelabv1.PostgresDatabaseSpec{Connection: "pg"}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(scheduleStatus(g, s).Conditions, backupv1.ConditionSource)).To(BeTrue())
			g.Expect(backupsOf(g, ns)).To(HaveLen(1))
		}).Should(Succeed())
	})

	It("refuses a schedule with a seconds field", func() {
		ns := newNamespace("sched-bad")
		readyStoreAndSource(ns, "store", "db")
		clock.Set(time.Now().Add(48 * time.Hour))
		s := newSchedule(ns, "nightly", "store", "db", "0 0 3 * * *")
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(scheduleStatus(g, s).Conditions, "Ready")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(backupv1.ReasonInvalid))
			g.Expect(c.Message).To(ContainSubstring("no seconds field"))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(backupsOf(g, ns)).To(BeEmpty()) }).WithTimeout(quiet).Should(Succeed())
	})

	It("prunes exactly what retention says: never the newest Completed, an in-use, an unfinished or a foreign Backup", func() {
		ns := newNamespace("sched-retention")
		readyStoreAndSource(ns, "store", "db")
		now := time.Now()
		clock.Set(now)
		day := 24 * time.Hour
		scheduledBackup(ns, "nightly", "a1", backupv1.BackupCompleted, now.Add(-5*day), "", true)
		scheduledBackup(ns, "nightly", "a2", backupv1.BackupCompleted, now.Add(-4*day), backupv1.VerificationVerified, true)
		scheduledBackup(ns, "nightly", "a3-in-use", backupv1.BackupCompleted, now.Add(-3*day), backupv1.VerificationRunning, true)
		scheduledBackup(ns, "nightly", "a4-newest", backupv1.BackupCompleted, now.Add(-2*day), backupv1.VerificationFailed, true)
		scheduledBackup(ns, "nightly", "a5-failed", backupv1.BackupFailed, now.Add(-1*day), "", true)
		scheduledBackup(ns, "nightly", "a6-running", backupv1.BackupRunning, now.Add(-6*day), "", true)
		scheduledBackup(ns, "nightly", "a7-foreign", backupv1.BackupCompleted, now.Add(-10*day), "", false)
		scheduledBackup(ns, "other", "a8-other-schedule", backupv1.BackupCompleted, now.Add(-10*day), "", true)

		s := newSchedule(ns, "nightly", "store", "db", "0 3 * * *")
		s.Spec.Suspend = true
		s.Spec.Retention = &backupv1.BackupRetention{KeepLast: ptr.To[int32](1)}
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())

		kept := []string{"a3-in-use", "a4-newest", "a5-failed", "a6-running", "a7-foreign", "a8-other-schedule"}
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(kept)) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(kept)) }).WithTimeout(quiet).Should(Succeed())
		Eventually(func(g Gomega) {
			st := scheduleStatus(g, s)
			g.Expect(st.LastSuccessfulBackup).To(Equal("a4-newest"))
			g.Expect(st.LastVerification).To(Equal(backupv1.VerificationFailed), "the newest drill's, not a2's older Verified")
		}).Should(Succeed())

		By("control: the drill ends, and the Backup it read is pruned")
		Eventually(func(g Gomega) {
			var b backupv1.Backup
			g.Expect(k8s.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: "a3-in-use"}, &b)).To(Succeed())
			b.Status.Verification.Result = backupv1.VerificationVerified
			g.Expect(k8s.Status().Update(suiteCtx, &b)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(kept[1:])) }).Should(Succeed())
	})

	It("keeps the newest Completed Backup when maxAge would prune them all", func() {
		ns := newNamespace("sched-maxage")
		readyStoreAndSource(ns, "store", "db")
		now := time.Now()
		clock.Set(now)
		scheduledBackup(ns, "weekly", "b1", backupv1.BackupCompleted, now.Add(-72*time.Hour), "", true)
		scheduledBackup(ns, "weekly", "b2", backupv1.BackupCompleted, now.Add(-48*time.Hour), "", true)
		s := newSchedule(ns, "weekly", "store", "db", "@weekly")
		s.Spec.Suspend = true
		s.Spec.Retention = &backupv1.BackupRetention{MaxAge: &metav1.Duration{Duration: time.Hour}}
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("b2")) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("b2")) }).WithTimeout(quiet).Should(Succeed())
	})

	It("never adopts a Backup it did not make that holds a run's name, and writes nothing when nothing changed", func() {
		ns := newNamespace("sched-conflict")
		readyStoreAndSource(ns, "store", "db")
		now := time.Now().Add(48 * time.Hour)
		clock.Set(now)
		taken := "nightly-" + latest0300(now).Format("20060102150405")
		// A user's Backup of another object under the run's name, without the operator's labels.
		foreign := &backupv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: taken},
			Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourceSojuBouncer, Name: "other"}, Store: "store"}}
		Expect(k8s.Create(suiteCtx, foreign)).To(Succeed())
		s := newSchedule(ns, "nightly", "store", "db", "0 3 * * *")
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())
		Eventually(func() string { return eventsOf(ns) }).Should(ContainSubstring("NameConflict"))
		Consistently(func(g Gomega) {
			b := backupsOf(g, ns)
			g.Expect(names(b)).To(ConsistOf(taken))
			g.Expect(b[taken].Labels).To(BeEmpty(), "the foreign Backup is left as it was")
			g.Expect(b[taken].Spec.Source.Name).To(Equal("other"))
		}).WithTimeout(quiet).Should(Succeed())

		By("an unchanged schedule reconciled again is not written")
		clock.Set(time.Now())
		s2 := newSchedule(ns, "idle", "store", "db", "@every 1h")
		Expect(k8s.Create(suiteCtx, s2)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(scheduleStatus(g, s2).Conditions, "Ready")).To(BeTrue())
		}).Should(Succeed())
		poke(s2)
		var rv string
		Eventually(func(g Gomega) {
			var live backupv1.BackupSchedule
			g.Expect(k8s.Get(suiteCtx, client.ObjectKeyFromObject(s2), &live)).To(Succeed())
			g.Expect(live.Annotations).To(HaveKey("test/poke"))
			rv = live.ResourceVersion
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			var live backupv1.BackupSchedule
			g.Expect(k8s.Get(suiteCtx, client.ObjectKeyFromObject(s2), &live)).To(Succeed())
			g.Expect(live.ResourceVersion).To(Equal(rv))
		}).WithTimeout(quiet).Should(Succeed())
	})

	It("copies its verify into the Backups it makes (drill), and accepts verify for a SojuBouncer (drills exist for every kind)", func() {
		ns := newNamespace("sched-verify")
		readyStoreAndSource(ns, "store", "db")
		now := time.Now().Add(48 * time.Hour)
		clock.Set(now)
		s := newSchedule(ns, "drilled", "store", "db", "0 3 * * *")
		s.Spec.Verify = true
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())
		name := "drilled-" + latest0300(now).Format("20060102150405")
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf(name)) }).Should(Succeed())
		b := backupsOf(Default, ns)[name]
		Expect(b.Spec).To(Equal(backupv1.BackupSpec{Source: s.Spec.Source, Store: "store",
			ArtifactPolicy: backupv1.ArtifactDelete, Verify: true}))
		// The control: the schedules of the other specs, without verify, make Backups without it (their
		// spec is compared whole above).

		bnc := newSchedule(ns, "bnc", "store", "bnc", "0 3 * * *")
		bnc.Spec.Source.Kind = backupv1.SourceSojuBouncer
		bnc.Spec.Verify = true
		Expect(k8s.Create(suiteCtx, bnc)).To(Succeed(), "verify of a SojuBouncer schedule")
	})
})
