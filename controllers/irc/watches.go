package irc

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"

	"github.com/platform-operator/platform-operator/internal/kit/backup/restoresource"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// watchShared has b watch what the ErgoNetwork and SojuBouncer controllers both watch besides their own
// kind: the children both make (Deployment, ConfigMap, Service, a restore's Job; the Certificate and Route
// where the cluster serves those APIs) and, where it serves the backup API, the Backups and BackupStores a
// restore waits for and the owner's own Backups, for status.lastBackup (restoresource.Watch, with kind's
// list and pending test). Each kind adds its own watches to what this returns.
func watchShared(mgr ctrl.Manager, b *builder.Builder, caps platform.Capabilities, kind restoresource.Kind) (*builder.Builder, error) {
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
	return restoresource.Watch(mgr, b, kind)
}
