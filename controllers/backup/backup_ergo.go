package backup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/kit/backup"
	"github.com/platform-operator/platform-operator/internal/kit/backup/jobs"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// +kubebuilder:rbac:groups=irc.josie.cloud,resources=ergonetworks,verbs=get;list;watch

// ergoSource is what reconcileErgoSource found of a Backup's ErgoNetwork: the network, Ready, and the
// image of its running ergo pod (the datastore's writer, recorded as the artifact's tool version).
type ergoSource struct {
	network *ircv1.ErgoNetwork
	image   string
}

// sourceFormat is the artifact's format for a source kind: a copy of ergo's datastore, or a pg_dump.
func sourceFormat(kind backupv1.SourceKind) backup.Format {
	if kind == backupv1.SourceErgoNetwork {
		return backup.FormatBuntDB
	}
	return backup.FormatPgDumpCustom
}

// reconcileErgoSource finds the ErgoNetwork in the Backup's namespace, Ready, with a running ergo pod: the
// claim is ReadWriteOnce, so the Job reads it on that pod's node, and waits (SourceNotReady) while there
// is none.
func (r *backupReconciler) reconcileErgoSource(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	name := s.b.Spec.Source.Name
	n := &ircv1.ErgoNetwork{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.b.Namespace, Name: name}, n)
	switch {
	case apierrors.IsNotFound(err):
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceMissing, fmt.Sprintf("ErgoNetwork %q does not exist", name))
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	case !meta.IsStatusConditionTrue(n.Status.Conditions, ircv1.ConditionReady):
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceNotReady, fmt.Sprintf("ErgoNetwork %q is not Ready", name))
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	pod, err := r.ergoPod(ctx, n)
	if err != nil {
		return ctrl.Result{}, err
	}
	if pod == nil {
		r.wait(s, backupv1.ConditionSource, backupv1.ReasonSourceNotReady,
			fmt.Sprintf("ErgoNetwork %q has no running ergo pod: its claim %s is read on that pod's node", name, ergo.PVCName(n)))
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	s.ergo = &ergoSource{network: n, image: ergoImage(pod)}
	s.Set(backupv1.ConditionSource, metav1.ConditionTrue, reasonSourceReady,
		fmt.Sprintf("ErgoNetwork %q is Ready and its ergo pod runs: its claim %s is read on that pod's node", name, ergo.PVCName(n)))
	return ctrl.Result{}, nil
}

// ergoPod is a running, not deleted pod of the network's Deployment (nil when there is none), read from
// the API server: pods are not cached.
func (r *backupReconciler) ergoPod(ctx context.Context, n *ircv1.ErgoNetwork) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(n.Namespace), client.MatchingLabels(ergo.SelectorLabels(n))); err != nil {
		return nil, fmt.Errorf("list the ergo pods of ErgoNetwork %q: %w", n.Name, err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
			return p, nil
		}
	}
	return nil, nil
}

// ergoImage is the image of the pod's ergo container ("" when it has none).
func ergoImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == ergo.ContainerName {
			return c.Image
		}
	}
	return ""
}

// startDatastoreJob applies the store file and the Job that copies the network's ircd.db to the store,
// once store and source are there.
func (r *backupReconciler) startDatastoreJob(ctx context.Context, s *backupScope) (ctrl.Result, error) {
	if s.store == nil || s.ergo == nil {
		return ctrl.Result{}, nil // reconcileStore and reconcileErgoSource said why
	}
	operatorImage := r.own.Get(ctx)
	if operatorImage == "" {
		r.wait(s, reconcile.ConditionReady, reasonImageUnknown,
			"the operator does not know its own image, which the Job runs: RELATED_IMAGE_OPERATOR is unset and its own pod (POD_NAMESPACE, POD_NAME) could not be read")
		return ctrl.Result{RequeueAfter: backupWaitRecheck}, nil
	}
	n := s.ergo.network
	id := jobs.ID(s.b)
	in := jobs.DatastoreInput{Store: s.store, AccessKeyIDKey: accessKeyIDKey(s.store), SecretAccessKeyKey: secretAccessKeyKey(s.store),
		CAKey: caKey(s.store), ID: id, OperatorImage: operatorImage,
		ClaimName: ergo.PVCName(n), DataDir: ergo.DataDir, DataFile: ergo.DatastoreFile, PodSelector: ergo.SelectorLabels(n),
		RunAsUser: ergo.DatastoreUser(r.OpenShift), Format: backup.FormatBuntDB, ToolVersion: s.ergo.image}
	cm, err := jobs.StoreConfigMap(s.b, jobs.Input{Store: s.store})
	if err != nil {
		return ctrl.Result{}, err
	}
	if applied, res, err := s.Apply(ctx, cm, reconcile.ConditionReady); !applied {
		return res, err
	}
	job := r.bounded(jobs.DatastoreJob(s.b, in))
	if applied, res, err := s.Apply(ctx, job, reconcile.ConditionReady); !applied {
		return res, err
	}
	started := job.CreationTimestamp
	s.status.Phase, s.status.ID, s.status.StartTime = backupv1.BackupRunning, id, &started
	s.status.Format = string(backup.FormatBuntDB)
	s.Set(reconcile.ConditionReady, metav1.ConditionFalse, reasonRunning,
		fmt.Sprintf("Job %s is copying %s from claim %s", jobs.Name(s.b), ergo.DatastoreFile, in.ClaimName))
	return ctrl.Result{}, nil
}
