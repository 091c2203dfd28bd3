package irc

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/monitoring"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Options configure the irc controllers; flags.go fills them from the command line.
type Options struct {
	// ErgoImage is the ergo image of ErgoNetworks; ergo.DefaultImage when empty.
	ErgoImage string
	// SojuImage is the soju image of SojuBouncers; soju.DefaultImage when empty.
	SojuImage string
	// MaxConcurrentReconciles is how many objects of each kind are reconciled at once; 1 when zero.
	MaxConcurrentReconciles int
	// SojuAdminSecret is the operator-wide admin connection Secret of SojuBouncer databases
	// (--soju-database-secret); zero when there is none.
	SojuAdminSecret types.NamespacedName
	// SojuAdminNamespaces are the namespaces besides SojuAdminSecret's own whose bouncers may use it
	// (--soju-database-namespaces).
	SojuAdminNamespaces []string
	// OperatorImage is the operator's own image (the backup group's, main.go), run by an ErgoNetwork's
	// restore Job and a SojuBouncer restore Job's init container; when empty it is read from the
	// operator's own pod (PodNamespace, PodName, the backup group's too).
	OperatorImage string
	// PodNamespace and PodName are the operator's own pod (POD_NAMESPACE, POD_NAME).
	PodNamespace, PodName string
	// RestorePostgresImage is pg_restore's image template with %d for the server's major version: the
	// backup group's --backup-postgres-image.
	RestorePostgresImage string
}

// Group is the irc API group as the manager sees it: ErgoNetworks and SojuBouncers.
func Group(opts Options) manager.Group {
	return groupOf(
		ergoNetworks(&ErgoNetworkReconciler{Image: opts.ErgoImage, MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			OperatorImage: opts.OperatorImage, PodNamespace: opts.PodNamespace, PodName: opts.PodName}),
		sojuBouncers(&SojuBouncerReconciler{Image: opts.SojuImage, MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			DefaultAdminSecret: opts.SojuAdminSecret, DefaultAdminNamespaces: opts.SojuAdminNamespaces,
			OperatorImage: opts.OperatorImage, PodNamespace: opts.PodNamespace, PodName: opts.PodName,
			PostgresImage: opts.RestorePostgresImage}),
	)
}

// groupOf is the group's table: the cache rules both kinds share, then the given rows (tests run one
// kind alone, with a reconciler they watch).
func groupOf(rows ...manager.Row) manager.Group {
	// The SojuBouncer controller reads the same kinds as the ErgoNetwork one (its children carry the
	// operator's labels, and Secrets are cached as metadata), so the rules are shared.
	shared := manager.SharedCache{Name: "irc children", Cache: CacheRules}
	return manager.NewGroup("irc", append([]manager.Row{shared}, rows...)...)
}

// ergoNetworks is the ErgoNetwork row of the table, run by r: besides the shared rules, the restore Jobs
// (the operator's own, labelled), and the Backups (restores and status.lastBackup) where the cluster
// serves them.
func ergoNetworks(r *ErgoNetworkReconciler) manager.Reconciler {
	return manager.Reconciler{Name: "ErgoNetwork",
		Cache: func(caps platform.Capabilities) []manager.CacheRule {
			rules := []manager.CacheRule{{Object: &batchv1.Job{}}}
			if caps.Backups {
				rules = append(rules, lastbackup.CacheRule())
			}
			return rules
		},
		Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			r.Capabilities = caps
			return r.SetupWithManager(mgr)
		}}
}

// sojuBouncers is the SojuBouncer row of the table, run by r: besides the shared rules, the PodMonitors
// of bouncers with metrics where the cluster serves them, only the operator's own (the default scope),
// cut to metadata, the restore Jobs (the operator's own), and the Backups (status.lastBackup, restores)
// where the cluster serves them.
func sojuBouncers(r *SojuBouncerReconciler) manager.Reconciler {
	return manager.Reconciler{Name: "SojuBouncer",
		Cache: func(caps platform.Capabilities) []manager.CacheRule {
			rules := []manager.CacheRule{{Object: &batchv1.Job{}}}
			if caps.PodMonitors {
				rules = append(rules, manager.CacheRule{Object: &monitoring.PodMonitor{},
					TransformSelector: labels.SelectorFromSet(labels.Set{oplabels.ManagedByLabel: oplabels.OperatorName, oplabels.NameLabel: soju.AppName}),
					Transform:         slimPodMonitor})
			}
			if caps.Backups {
				rules = append(rules, lastbackup.CacheRule())
			}
			return rules
		},
		Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			r.Capabilities = caps
			return r.SetupWithManager(mgr)
		}}
}
