package irc

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/backup/lastbackup"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// watchShared has b watch what the ErgoNetwork and SojuBouncer controllers both watch besides their own
// kind: the children both make (Deployment, ConfigMap, Service, a restore's Job; the Certificate and Route
// where the cluster serves those APIs) and, where it serves the backup API, the Backups and BackupStores a
// restore waits for (restoresIn maps them to the owners restoring in their namespace) and the owner's own
// Backups of kind source, for status.lastBackup. Each kind adds its own watches to what this returns.
func watchShared(mgr ctrl.Manager, b *builder.Builder, caps platform.Capabilities, source backupv1.SourceKind, restoresIn handler.MapFunc) (*builder.Builder, error) {
	b = b.Owns(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		// A restore's Job.
		Owns(&batchv1.Job{})
	if caps.CertManager {
		b = b.Owns(&cmv1.Certificate{})
	}
	if caps.Routes {
		b = b.Owns(&routev1.Route{})
	}
	if !caps.Backups {
		return b, nil
	}
	b = b.Watches(&backupv1.Backup{}, handler.EnqueueRequestsFromMapFunc(restoresIn)).
		Watches(&backupv1.BackupStore{}, handler.EnqueueRequestsFromMapFunc(restoresIn))
	return lastbackup.Watch(mgr, b, source)
}
