package homelab

import (
	"context"
	"fmt"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/domain"
	"github.com/platform-operator/platform-operator/internal/kit/istio"
)

// finalize removes what the Domain made in the gateway namespace (the Gateway, the Certificate and the
// Secret cert-manager wrote for it), then its finalizer. Only objects carrying the operator's labels for
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

// removeChildren deletes the Gateway, the Certificate and the certificate's Secret the operator made for
// d in the gateway namespace, those that carry d's labels, and says which it deleted (for an event): on
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
		if err := del("Certificate", &cmv1.Certificate{}, name); err != nil {
			return deleted, err
		}
	}
	err := del("Secret", &corev1.Secret{}, domain.TLSSecretName(d))
	return deleted, err
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
