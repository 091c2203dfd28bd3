package backup

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Options configure the backup controllers; flags.go fills them from the command line.
type Options struct {
	// MaxConcurrentReconciles is how many objects of each kind are reconciled at once.
	MaxConcurrentReconciles int
	// OperatorImage is the operator's own image (RELATED_IMAGE_OPERATOR): a backup Job's init container
	// copies the operator's binary from it. When empty it is read from the operator's own pod; Backups
	// wait with a condition while neither is known.
	OperatorImage string
	// PodNamespace and PodName are the operator's own pod (POD_NAMESPACE, POD_NAME): its manager
	// container's image is the operator's image when OperatorImage is empty.
	PodNamespace, PodName string
	// PostgresImage is the image template of pg_dump's container, with %d for the server's major version.
	PostgresImage string
	// ReleaseTimeout is how long a deleted Backup waits for its store to delete its artifact;
	// DefaultReleaseTimeout when zero.
	ReleaseTimeout time.Duration
	// JobDeadline bounds every backup, datastore and drill Job; DefaultJobDeadline when zero.
	JobDeadline time.Duration
}

// Group is the backup API group as the manager sees it: one row per kind.
func Group(opts Options) manager.Group {
	workers := opts.MaxConcurrentReconciles
	return manager.NewGroup("backup",
		manager.Reconciler{Name: "BackupStore", Cache: backupStoreCache, Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&backupStoreReconciler{MaxConcurrentReconciles: workers}).SetupWithManager(mgr)
		}},
		manager.Reconciler{Name: "Backup", Cache: backupCache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			return (&backupReconciler{MaxConcurrentReconciles: workers, OperatorImage: opts.OperatorImage, OpenShift: caps.OpenShift,
				PostgresImage: opts.PostgresImage, ReleaseTimeout: opts.ReleaseTimeout, JobDeadline: opts.JobDeadline,
				PodNamespace: opts.PodNamespace, PodName: opts.PodName}).SetupWithManager(mgr)
		}},
		manager.Reconciler{Name: "BackupSchedule", Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return (&ScheduleReconciler{MaxConcurrentReconciles: workers}).SetupWithManager(mgr)
		}},
	)
}
