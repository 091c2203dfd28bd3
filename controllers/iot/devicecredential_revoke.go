package iot

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// revokeAttempts bounds the rewrites of the authority Secret one revocation tries when other
// revocations keep landing first.
const revokeAttempts = 20

// revoke revokes user key in dc's broker's account: the account JWT is re-signed with the key in its
// revocation list and written back into the authority Secret (a merge patch of account.jwt alone)
// under the resourceVersion it was read at
// (two revocations at once: the second one's write conflicts, it reads the first one's JWT and
// revokes on top of it), then pushed to the servers, which close the user's connections and refuse
// new ones. A key already revoked in the Secret is only pushed again. It returns the servers that
// saved the new account.
func (r *DeviceCredentialReconciler) revoke(ctx context.Context, dc *iotv1.DeviceCredential, key string) ([]string, error) {
	b, err := r.Brokers.Broker(ctx, dc.Namespace, dc.Spec.Broker)
	if err != nil {
		return nil, fmt.Errorf("FleetBroker %s: %w", dc.Spec.Broker, err)
	}
	for range revokeAttempts {
		sec, a, err := readAuthority(ctx, r.APIReader, dc.Namespace, b)
		if err != nil {
			return nil, err
		}
		changed, err := a.RevokeLater(ctx, key)
		if err != nil {
			return nil, err
		}
		if changed {
			base := sec.DeepCopy()
			sec.Data[auth.AccountJWTFile] = []byte(a.AccountJWT)
			err := r.Client.Patch(ctx, sec, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
			if apierrors.IsConflict(err) {
				continue // another revocation (or change) landed first: revoke on top of it
			}
			if err != nil {
				return nil, fmt.Errorf("write the revocation into Secret %s: %w", b.AuthoritySecret, err)
			}
		}
		return r.pushCurrent(ctx, dc.Namespace, b, a, key)
	}
	return nil, fmt.Errorf("the authority Secret %s kept changing under %d attempts to revoke", b.AuthoritySecret, revokeAttempts)
}

// pushCurrent pushes a's account JWT to b's servers, then reads the authority Secret again and, while
// it holds another account JWT (a revocation that landed meanwhile), pushes that one: a server takes
// every pushed account JWT, an older one too, so a push that lost a race to a newer revocation's must
// be followed by the newer one. The last push of every revoker is then the Secret's JWT as it read it
// after pushing, and the servers end with the latest.
func (r *DeviceCredentialReconciler) pushCurrent(ctx context.Context, ns string, b Broker, a *auth.Authority, key string) ([]string, error) {
	for range revokeAttempts {
		if r.beforePush != nil {
			r.beforePush(key)
		}
		servers, err := pushAccount(ctx, b, a)
		if err != nil {
			return servers, fmt.Errorf("the revocation is in Secret %s, but pushing it to the servers failed: %w", b.AuthoritySecret, err)
		}
		_, now, err := readAuthority(ctx, r.APIReader, ns, b)
		if err != nil {
			return servers, err
		}
		if now.AccountJWT == a.AccountJWT {
			return servers, nil
		}
		a = now
	}
	return nil, fmt.Errorf("the authority Secret %s kept changing under %d pushes", b.AuthoritySecret, revokeAttempts)
}

// issuedKey is the user key of dc's credentials: its status's, or, when the status was never written
// after the issue, its Secret's; empty when nothing was issued.
func (r *DeviceCredentialReconciler) issuedKey(ctx context.Context, dc *iotv1.DeviceCredential) (string, error) {
	if dc.Status.UserKey != "" {
		return dc.Status.UserKey, nil
	}
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: dc.Namespace, Name: dc.SecretNameOrDefault()}, sec)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !metav1.IsControlledBy(sec, dc) {
		return "", nil
	}
	key, _, _, err := auth.UserOf(sec.Data[CredsKey])
	if err != nil {
		return "", nil // nothing this object could have issued
	}
	return key, nil
}
