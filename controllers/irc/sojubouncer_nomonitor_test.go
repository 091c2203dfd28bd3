package irc

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/irc/soju/sojutest"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup/lastbackuptest"
	"github.com/platform-operator/platform-operator/internal/postgres/postgrestest"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// A cluster without the Prometheus Operator: a bouncer that enables metrics still gets its listener and
// ports, says in a condition outside Ready why it has no PodMonitor, and is Ready. The operator was
// installed without its backup CRDs too: the bouncer's controller watches no Backup (a controller watching
// a kind nobody serves would never start its workers) and the bouncer shows no last backup.
var _ = Describe("SojuBouncer metrics on a cluster without PodMonitors or the backup API", Ordered, func() {
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

		pg, err := postgrestest.Start(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(pg.Stop()).To(Succeed()) })
		Expect(pg.CreateRole(ctx, "soju_operator", "operator-pw", "CREATEROLE CREATEDB")).To(Succeed())

		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nomon-"}}
		Expect(c.Create(ctx, n)).To(Succeed())
		ns = n.Name
		Expect(c.Create(ctx, sojutest.ConnectionSecret(ns, "pg-admin", pg.Host, pg.Port, "soju_operator", "operator-pw"))).To(Succeed())

		lastbackuptest.RemoveBackupAPI(ctx, c, env.Config)
		caps, err := env.Discover()
		Expect(err).NotTo(HaveOccurred())
		Expect(caps.PodMonitors).To(BeFalse())
		Expect(caps.Backups).To(BeFalse())
		r := &SojuBouncerReconciler{Image: "registry.example/soju:test"}
		testenv.RunManager(ctx, env.Config, testenv.ManagerOptions(&testutil.WriteCounter{}), caps, groupOf(sojuBouncers(r)))
	})

	It("serves the port, reports APINotAvailable outside Ready, is Ready, and shows no last backup", func() {
		Expect(c.Create(ctx, sojutest.AdminUserSecret(ns, "nomon-admin", "admin-pw"))).To(Succeed())
		b := sojutest.PlainBouncer(ns, "nomon", "pg-admin")
		b.Spec.Metrics = &ircv1.SojuMetrics{Enabled: true, Port: 9191}
		Expect(c.Create(ctx, b)).To(Succeed())

		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nomon-config"}, cm)).To(Succeed())
			g.Expect(cm.Data["config"]).To(ContainSubstring("listen http+insecure+prometheus://:9191\n"))
			svc := &corev1.Service{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nomon"}, svc)).To(Succeed())
			g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", soju.MetricsPortName)))
			d := &appsv1.Deployment{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nomon"}, d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.Containers[0].Ports).To(ContainElement(HaveField("ContainerPort", int32(9191))))
		}).Should(Succeed())
		Expect(ergotest.MarkDeploymentAvailable(ctx, c, ns, "nomon")).To(Succeed())

		Eventually(func(g Gomega) {
			got := &ircv1.SojuBouncer{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
			byType := map[string]metav1.Condition{}
			for _, cond := range got.Status.Conditions {
				byType[cond.Type] = cond
			}
			g.Expect(byType).To(HaveKey(ircv1.ConditionMetricsMonitor))
			mon := byType[ircv1.ConditionMetricsMonitor]
			g.Expect(mon.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(mon.Reason).To(Equal(ircv1.ReasonAPINotAvailable))
			g.Expect(mon.Message).To(ContainSubstring("monitoring.coreos.com/v1 PodMonitor"))
			g.Expect(byType[ircv1.ConditionReady].Status).To(Equal(metav1.ConditionTrue), byType[ircv1.ConditionReady].Message)
			g.Expect(got.Status.LastBackupTime).To(BeNil())
			g.Expect(got.Status.LastBackup).To(BeEmpty())
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(c.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			var warned int32
			for _, e := range events.Items {
				if e.Reason == ircv1.ReasonAPINotAvailable {
					warned += max(e.Count, 1)
				}
			}
			// Warned when the condition changes, as every part's failure; not asserted as exactly one,
			// since two reconciles may both start before the first's status write reaches the cache.
			g.Expect(warned).To(BeNumerically(">=", 1), "no APINotAvailable Warning event")
		}).Should(Succeed())
	})

	It("refuses a restore without the backup API: Restored APINotAvailable, and soju never starts", func() {
		b := sojutest.MinimalBouncer(ns, "restoring")
		b.Spec.Database.AdminSecretName = "pg-admin"
		b.Spec.Restore = &ircv1.RestoreSource{Backup: "nightly"}
		Expect(c.Create(ctx, b)).To(Succeed())
		restored := func(g Gomega) metav1.Condition {
			got := &ircv1.SojuBouncer{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(b), got)).To(Succeed())
			for _, cond := range got.Status.Conditions {
				if cond.Type == backupv1.ConditionRestored {
					return cond
				}
			}
			return metav1.Condition{}
		}
		Eventually(func(g Gomega) {
			r := restored(g)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(r.Reason).To(Equal(ircv1.ReasonAPINotAvailable), r.Message)
			g.Expect(r.Message).To(ContainSubstring("backup.josie.cloud/v1alpha1"))
		}).Should(Succeed())
		// The database is made (the control that the bouncer got that far), soju is not.
		Eventually(func() error {
			return c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "restoring-db"}, &corev1.Secret{})
		}).Should(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "restoring"}, &appsv1.Deployment{})) &&
				apierrors.IsNotFound(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "restoring-restore"}, &batchv1.Job{}))
		}).WithTimeout(2 * time.Second).Should(BeTrue())
	})
})
