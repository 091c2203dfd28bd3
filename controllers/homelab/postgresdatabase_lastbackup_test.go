package homelab

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup/lastbackuptest"
)

// The suite runs no backup controller: the scenario writes the Backups' statuses itself.
var _ = Describe("PostgresDatabase last backup", func() {
	It("shows its newest Completed Backup, not a Failed or Running one, nor another namespace's or kind's", func(ctx SpecContext) {
		Expect(caps.Backups).To(BeTrue(), "the suite's API server serves the backup CRDs")
		ns, other := newNamespace("lastbackup"), newNamespace("lastbackup-other")
		// A connection that does not exist: the database waits for it, and its status is written all the same.
		db := newDatabase(ns, "app", "missing")
		lastbackuptest.Run(ctx, k8s, lastbackuptest.Source{Object: db, OtherKind: backupv1.SourceSojuBouncer, OtherNamespace: other,
			Bump: func(ctx context.Context) error {
				return retry.RetryOnConflict(retry.DefaultRetry, func() error {
					got := &homelabv1.PostgresDatabase{}
					if err := k8s.Get(ctx, client.ObjectKeyFromObject(db), got); err != nil {
						return err
					}
					if got.Spec.ReclaimPolicy == homelabv1.DatabaseReclaimRetain {
						got.Spec.ReclaimPolicy = homelabv1.DatabaseReclaimDelete
					} else {
						got.Spec.ReclaimPolicy = homelabv1.DatabaseReclaimRetain
					}
					return k8s.Update(ctx, got)
				})
			}})
	})
})
