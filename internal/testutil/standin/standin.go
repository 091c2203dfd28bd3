// Package standin plays, in tests, the controllers a test cluster does not run: cert-manager issuing a
// Certificate, the Deployment controller rolling a Deployment out, the volume binder binding a claim. It is
// the one place for these cert-manager and apps fixtures; it imports no package of this module, so every
// test layer (builders' tests, envtest suites, e2e, the demo, the bench) can use it.
package standin

import (
	"context"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkCertificateReady plays cert-manager once it has issued the certificate: it sets the Certificate's
// Ready condition through the status subresource, retrying on conflict.
func MarkCertificateReady(ctx context.Context, c client.Client, ns, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cert := &cmv1.Certificate{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cert); err != nil {
			return err
		}
		cert.Status.Conditions = []cmv1.CertificateCondition{{
			Type: cmv1.CertificateConditionReady, Status: cmmeta.ConditionTrue,
			Reason: "Issued", Message: "Certificate is up to date and has not expired (set by a test stand-in for cert-manager)",
			LastTransitionTime: ptr.To(metav1.Now()), ObservedGeneration: cert.Generation,
		}}
		return c.Status().Update(ctx, cert)
	})
}

// MarkDeploymentAvailable plays the Deployment controller, which envtest does not run: the Deployment's
// current generation is rolled out with every replica its spec asks for available (one when the spec
// leaves it unset, as the API server defaults it), and the rollout reported complete (Progressing=True,
// NewReplicaSetAvailable), as kstatus (reconcile.DeploymentReady) reads it.
func MarkDeploymentAvailable(ctx context.Context, c client.Client, ns, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		n := ptr.Deref(d.Spec.Replicas, 1)
		now := metav1.Now()
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
				Reason: "MinimumReplicasAvailable", LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
					Reason: "NewReplicaSetAvailable", LastUpdateTime: now, LastTransitionTime: now}},
		}
		return c.Status().Update(ctx, d)
	})
}

// MarkClaimBound plays the volume binder, which envtest does not run: it binds the claim with the spec's
// requested size, or sets phase (Lost, Pending) when given one.
func MarkClaimBound(ctx context.Context, c client.Client, ns, name string, phase ...corev1.PersistentVolumeClaimPhase) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
			return err
		}
		pvc.Status.Phase = corev1.ClaimBound
		if len(phase) > 0 {
			pvc.Status.Phase = phase[0]
		}
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: *pvc.Spec.Resources.Requests.Storage()}
		return c.Status().Update(ctx, pvc)
	})
}
