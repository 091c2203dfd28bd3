package schedulesuite

import (
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	backupctl "github.com/platform-operator/platform-operator/controllers/backup"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// fakeClock is the reconciler's clock in the suite: specs set it; it does not move by itself.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// clock is the suite's fake clock; it starts at the real time.
var clock = &fakeClock{t: time.Now()}

// scheduleGroup is a group with the BackupSchedule reconciler only, on the fake clock.
func scheduleGroup() manager.Group {
	return manager.NewGroup("backup-schedule", manager.Reconciler{Name: "BackupSchedule",
		Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&backupctl.ScheduleReconciler{Now: clock.Now}).SetupWithManager(mgr)
		}})
}

// readyStoreAndSource makes a BackupStore named store in ns with a Ready condition (no BackupStore controller
// runs in this suite) and a PostgresDatabase named db to back up.
func readyStoreAndSource(ns, store, db string) {
	bs := &backupv1.BackupStore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: store},
		Spec: backupv1.BackupStoreSpec{Endpoint: "http://127.0.0.1:1", Bucket: "backups",
			Credentials: backupv1.BackupStoreCredentials{SecretName: "s3"}},
	}
	Expect(k8s.Create(suiteCtx, bs)).To(Succeed())
	bs.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: backupv1.ReasonReachable,
		Message: "test", LastTransitionTime: metav1.Now()}}
	Expect(k8s.Status().Update(suiteCtx, bs)).To(Succeed())
	Expect(k8s.Create(suiteCtx, &homelabv1.PostgresDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db},
		Spec: homelabv1.PostgresDatabaseSpec{Connection: "pg"}})).To(Succeed())
}

// newSchedule is a BackupSchedule of PostgresDatabase db to store.
func newSchedule(ns, name, store, db, cron string) *backupv1.BackupSchedule {
	return &backupv1.BackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: backupv1.BackupScheduleSpec{
			Source:   backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: db},
			Store:    store,
			Schedule: cron,
		},
	}
}

// backupsOf lists the Backups in ns (all of them, not only the schedule's), by name.
func backupsOf(g Gomega, ns string) map[string]backupv1.Backup {
	var list backupv1.BackupList
	g.Expect(k8s.List(suiteCtx, &list, client.InNamespace(ns))).To(Succeed())
	out := map[string]backupv1.Backup{}
	for _, b := range list.Items {
		out[b.Name] = b
	}
	return out
}

// scheduledBackup makes a Backup as schedule sched would have (its labels), with phase and startTime
// set through the status subresource, and the drill result verification when not empty.
func scheduledBackup(ns, sched, name string, phase backupv1.BackupPhase, started time.Time, verification backupv1.VerificationResult,
	ours bool) {
	b := &backupv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			backupv1.LabelSchedule: sched, backupv1.LabelSourceKind: string(backupv1.SourcePostgresDatabase), backupv1.LabelSourceName: "db"}},
		Spec: backupv1.BackupSpec{Source: backupv1.BackupSource{Kind: backupv1.SourcePostgresDatabase, Name: "db"}, Store: "store",
			ArtifactPolicy: backupv1.ArtifactDelete},
	}
	if ours {
		b.Labels[oplabels.ManagedByLabel] = oplabels.OperatorName
	}
	Expect(k8s.Create(suiteCtx, b)).To(Succeed())
	setPhase(b, phase, started)
	if verification != "" {
		b.Status.Verification = &backupv1.BackupVerification{Result: verification}
	}
	Expect(k8s.Status().Update(suiteCtx, b)).To(Succeed())
}

// setPhase sets b's phase and times in memory (the caller updates the status).
func setPhase(b *backupv1.Backup, phase backupv1.BackupPhase, started time.Time) {
	b.Status.Phase = phase
	b.Status.StartTime = &metav1.Time{Time: started}
	if phase == backupv1.BackupCompleted || phase == backupv1.BackupFailed {
		b.Status.CompletionTime = &metav1.Time{Time: started.Add(time.Minute)}
	}
}

// finish sets the phase of the Backup named name in ns through the status subresource.
func finish(ns, name string, phase backupv1.BackupPhase, started time.Time) {
	Eventually(func(g Gomega) {
		var b backupv1.Backup
		g.Expect(k8s.Get(suiteCtx, client.ObjectKey{Namespace: ns, Name: name}, &b)).To(Succeed())
		setPhase(&b, phase, started)
		g.Expect(k8s.Status().Update(suiteCtx, &b)).To(Succeed())
	}).Should(Succeed())
}

// eventsOf is the reasons and messages of the events in ns, one a line.
func eventsOf(ns string) string {
	var list corev1.EventList
	Expect(k8s.List(suiteCtx, &list, client.InNamespace(ns))).To(Succeed())
	var b strings.Builder
	for _, e := range list.Items {
		b.WriteString(e.Reason + ": " + e.Message + "\n")
	}
	return b.String()
}
