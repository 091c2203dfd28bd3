package homelab

import (
	"context"
	"fmt"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/domain"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

// finalize removes what the Domain made in the gateway namespace (the Gateway, the Certificate and, by
// the garbage collector, the Secret cert-manager wrote for it), then its finalizer. Only objects carrying the operator's labels for
// this very Domain are deleted; one already gone, or a kind this cluster does not serve, is nothing to
// do. An error (the API server refusing a delete) is returned and retried with backoff.
func (r *DomainReconciler) finalize(ctx context.Context, s *domainScope) error {
	_, err := r.finalizer.Finalize(ctx, s.domain, func(ctx context.Context) error {
		deleted, err := r.removeChildren(ctx, s.domain)
		if err != nil {
			return err
		}
		if len(deleted) > 0 {
			s.Normalf(eventDomainCleanedUp, "Deleted %s", strings.Join(deleted, ", "))
		}
		return nil
	})
	return err
}

// removeChildren deletes the Gateway and the Certificate the operator made for d in the gateway namespace
// (the certificate's Secret handed to the garbage collector with it), those that carry d's labels, and says which it deleted (for an event): on
// deletion, and when d loses its claim to its hostname.
func (r *DomainReconciler) removeChildren(ctx context.Context, d *homelabv1.Domain) ([]string, error) {
	name := domain.ChildName(d)
	var deleted []string
	del := func(kind string, obj client.Object, objName string) error {
		gone, err := r.deleteIfBelongs(ctx, d, obj, objName)
		if gone {
			deleted = append(deleted, eventObject(kind, obj))
		}
		return err
	}
	if r.Capabilities.Istio {
		if err := del("Gateway", &istio.Gateway{}, name); err != nil {
			return deleted, err
		}
	}
	if r.Capabilities.CertManager {
		// The Secret cert-manager wrote goes with its Certificate: handed to the garbage collector before
		// the Certificate is deleted, so the operator needs no delete on Secrets anywhere.
		tls, err := r.handSecretToCertificate(ctx, d, name)
		if err != nil {
			return deleted, err
		}
		if err := del("Certificate", &cmv1.Certificate{}, name); err != nil {
			return deleted, err
		}
		if tls != "" && len(deleted) > 0 && strings.HasPrefix(deleted[len(deleted)-1], "Certificate ") {
			deleted[len(deleted)-1] += " (with its Secret " + tls + ")"
		}
	}
	return deleted, nil
}

// handSecretToCertificate gives the certificate's Secret, when it carries d's labels, an owner reference to
// the Certificate named name when that is d's too, so that deleting the Certificate lets the garbage
// collector delete the Secret. It returns the Secret's name when it did (or found it done). A Secret or
// Certificate of another owner is left as it is; one already gone is nothing to do.
func (r *DomainReconciler) handSecretToCertificate(ctx context.Context, d *homelabv1.Domain, name string) (string, error) {
	cert := &cmv1.Certificate{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.GatewayNamespace, Name: name}, cert); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.GatewayNamespace, Name: domain.TLSSecretName(d)}, secret)
	if err != nil || !domain.BelongsTo(cert.GetLabels(), d) || !domain.BelongsTo(secret.GetLabels(), d) {
		return "", client.IgnoreNotFound(err)
	}
	for _, ref := range secret.OwnerReferences {
		if ref.UID == cert.UID {
			return secret.Name, nil
		}
	}
	before := secret.DeepCopy()
	// Not a controller reference (cert-manager writes the Secret) and no blockOwnerDeletion (which would
	// need update on certificates/finalizers).
	secret.OwnerReferences = append(secret.OwnerReferences, metav1.OwnerReference{APIVersion: cmv1.SchemeGroupVersion.String(),
		Kind: cmv1.CertificateKind, Name: cert.Name, UID: cert.UID})
	err = r.Client.Patch(ctx, secret, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("hand Secret %s/%s to its Certificate: %w", r.GatewayNamespace, secret.Name, err)
	}
	return secret.Name, nil
}

// deleteIfBelongs deletes the object of obj's kind named name in the gateway namespace when it carries
// the Domain's labels, reading it from the API server (the cache may not have seen it yet). It says
// whether it deleted something.
func (r *DomainReconciler) deleteIfBelongs(ctx context.Context, d *homelabv1.Domain, obj client.Object, name string) (bool, error) {
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.GatewayNamespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s/%s: %w", r.GatewayNamespace, name, err)
	}
	if !domain.BelongsTo(obj.GetLabels(), d) {
		return false, nil // someone else's object of that name: never ours to delete
	}
	err = r.Client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil // gone already, or replaced by another object since we read it
	}
	if err != nil {
		return false, fmt.Errorf("delete %s/%s: %w", r.GatewayNamespace, name, err)
	}
	return true, nil
}
