package homelab

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/homelabtest"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup/lastbackuptest"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// A cluster where the operator was installed without its backup CRDs: the homelab group starts (it
// watches no Backup: a controller watching a kind nobody serves would never start its workers), a
// PostgresDatabase is reconciled and shows no last backup, and one asking for a restore says why it
// cannot have it.
var _ = Describe("PostgresDatabase on a cluster without the backup API", Ordered, func() {
	var c client.Client
	BeforeAll(func() {
		ctx, cancel := context.WithCancel(context.Background())
		env, err := testenv.Start(testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		// Cleanups run last-registered first: the manager stops before its API server does.
		DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
		DeferCleanup(cancel)
		c = env.Client
		lastbackuptest.RemoveBackupAPI(ctx, c, env.Config)
		plainCaps, err := env.Discover()
		Expect(err).NotTo(HaveOccurred())
		Expect(plainCaps.Backups).To(BeFalse())
		opts := testenv.ManagerOptions(nil)
		opts.WebhookServer = &manager.DisabledWebhookServer{} // this API server calls no webhook
		testenv.RunManager(ctx, env.Config, opts, plainCaps, Group(suiteOptions()))
	})

	It("reconciles a database and shows no last backup", func(ctx SpecContext) {
		ns := testenv.NewNamespace(c, "nobackup")
		db := homelabtest.PostgresDatabase(ns, "app", "missing")
		Expect(c.Create(ctx, db)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &homelabv1.PostgresDatabase{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(db), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", homelabv1.ConditionConnection),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", homelabv1.ReasonMissingDependency))))
			g.Expect(got.Status.LastBackupTime).To(BeNil())
			g.Expect(got.Status.LastBackup).To(BeEmpty())
		}).Should(Succeed())
	})

	It("says why a database asking for a restore cannot have it", func(ctx SpecContext) {
		ns := testenv.NewNamespace(c, "nobackup")
		db := homelabTestDatabase(ns, "restored", homelabv1.RestoreSource{Backup: "nightly"})
		Expect(c.Create(ctx, db)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &homelabv1.PostgresDatabase{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(db), got)).To(Succeed())
			g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", homelabv1.ConditionRestored),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", homelabv1.ReasonAPINotAvailable))))
		}).Should(Succeed())
	})
})
