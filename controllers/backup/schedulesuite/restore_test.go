package schedulesuite

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	backupctl "github.com/platform-operator/platform-operator/controllers/backup"
)

// restoring makes a PostgresDatabase named name in ns restoring from from (no homelab controller runs in
// this suite: its restore stays unfinished until a spec finishes it by hand).
func restoring(ns, name string, from homelabv1.RestoreSource) *homelabv1.PostgresDatabase {
	GinkgoHelper()
	db := &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: homelabv1.PostgresDatabaseSpec{Connection: "pg", Restore: &from}}
	Expect(k8s.Create(suiteCtx, db)).To(Succeed())
	return db
}

// setRestoreStatus writes the restoring database's status as its controller would: restoredFrom (when
// from is not nil) and the Restored condition.
func setRestoreStatus(db *homelabv1.PostgresDatabase, from *homelabv1.RestoredFrom, status metav1.ConditionStatus, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var live homelabv1.PostgresDatabase
		g.Expect(k8s.Get(suiteCtx, client.ObjectKeyFromObject(db), &live)).To(Succeed())
		live.Status.RestoredFrom = from
		meta.SetStatusCondition(&live.Status.Conditions, metav1.Condition{Type: backupv1.ConditionRestored, Status: status,
			Reason: reason, Message: "test"})
		g.Expect(k8s.Status().Update(suiteCtx, &live)).To(Succeed())
	}).Should(Succeed())
}

// setID gives the Backup named name its artifact's id, as the Backup controller does once Completed.
func setID(ns, name, id string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var b backupv1.Backup
		g.Expect(k8s.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &b)).To(Succeed())
		b.Status.ID = id
		g.Expect(k8s.Status().Update(suiteCtx, &b)).To(Succeed())
	}).Should(Succeed())
}

var _ = Describe("BackupSchedule retention and restores", Serial, func() {
	day := 24 * time.Hour

	// retained makes four Completed Backups of schedule nightly, r1 the oldest, and a suspended schedule
	// keeping the last two: retention alone prunes r1 and r2.
	retained := func(ns string) *backupv1.BackupSchedule {
		GinkgoHelper()
		readyStoreAndSource(ns, "store", "db")
		now := time.Now()
		clock.Set(now)
		for i, name := range []string{"r1", "r2", "r3", "r4"} {
			scheduledBackup(ns, "nightly", name, backupv1.BackupCompleted, now.Add(time.Duration(i-5)*day), "", true)
			setID(ns, name, "id-"+name)
		}
		s := newSchedule(ns, "nightly", "store", "db", "0 3 * * *")
		s.Spec.Suspend = true
		s.Spec.Retention = &backupv1.BackupRetention{KeepLast: ptr.To[int32](2)}
		return s
	}

	It("never prunes a Backup an unfinished restore names, and prunes it once the restore finished", func() {
		ns := newNamespace("sched-restore-name")
		s := retained(ns)
		db := restoring(ns, "restored", homelabv1.RestoreSource{Backup: "r1"})
		// A finished restore of r2 (restoredFrom set) holds nothing.
		done := restoring(ns, "done", homelabv1.RestoreSource{Backup: "r2"})
		setRestoreStatus(done, &homelabv1.RestoredFrom{Backup: "r2", Store: "store", SourceName: "db", ID: "id-r2",
			Time: metav1.Now()}, metav1.ConditionTrue, backupv1.ReasonRestored)
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())

		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("r1", "r3", "r4")) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("r1", "r3", "r4")) }).WithTimeout(quiet).Should(Succeed())
		Eventually(func() string { return eventsOf(ns) }).Should(ContainSubstring(
			backupctl.EventBackupKept + `: Kept beyond retention while read: r1 (PostgresDatabase "restored" is restoring from it)`))
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(scheduleStatus(g, s).Conditions, "Ready")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring(`kept beyond retention while read: r1 (PostgresDatabase "restored" is restoring from it)`))
		}).Should(Succeed())

		By("control: the restore is running (Restored False, Restoring): still kept")
		setRestoreStatus(db, nil, metav1.ConditionFalse, backupv1.ReasonRestoring)
		Consistently(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("r1", "r3", "r4")) }).WithTimeout(quiet).Should(Succeed())

		By("the restore finishes: r1 is pruned, and Ready says nothing is kept")
		setRestoreStatus(db, &homelabv1.RestoredFrom{Backup: "r1", Store: "store", SourceName: "db", ID: "id-r1", Time: metav1.Now()},
			metav1.ConditionTrue, backupv1.ReasonRestored)
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("r3", "r4")) }).Should(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(scheduleStatus(g, s).Conditions, "Ready")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).NotTo(ContainSubstring("kept beyond retention"))
		}).Should(Succeed())
	})

	It("never prunes a Backup whose store, source name and id an unfinished restore names, and prunes it after a final failure", func() {
		ns := newNamespace("sched-restore-store")
		s := retained(ns)
		db := restoring(ns, "restored", homelabv1.RestoreSource{Store: "store", SourceName: "db", ID: "id-r2"})
		// Near misses read nothing: another store, another source name, another id.
		restoring(ns, "other-store", homelabv1.RestoreSource{Store: "elsewhere", SourceName: "db", ID: "id-r1"})
		restoring(ns, "other-source", homelabv1.RestoreSource{Store: "store", SourceName: "other", ID: "id-r1"})
		restoring(ns, "other-id", homelabv1.RestoreSource{Store: "store", SourceName: "db", ID: "id-r9"})
		Expect(k8s.Create(suiteCtx, s)).To(Succeed())

		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("r2", "r3", "r4")) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("r2", "r3", "r4")) }).WithTimeout(quiet).Should(Succeed())
		Eventually(func() string { return eventsOf(ns) }).Should(ContainSubstring(`r2 (PostgresDatabase "restored" is restoring from it)`))

		By("the restore fails for good (RestoreFailed): r2 is pruned")
		setRestoreStatus(db, nil, metav1.ConditionFalse, backupv1.ReasonRestoreFailed)
		Eventually(func(g Gomega) { g.Expect(names(backupsOf(g, ns))).To(ConsistOf("r3", "r4")) }).Should(Succeed())
	})
})
