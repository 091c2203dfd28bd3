package iot

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// reconcileCredentials finds the credentials in their Secret, or issues them once: the Secret is
// created (never updated), so the API server is what makes an issue happen once, and credentials
// exist nowhere but there. A Secret of that name the DeviceCredential does not control is left alone.
func (r *DeviceCredentialReconciler) reconcileCredentials(ctx context.Context, s *deviceCredentialScope) (ctrl.Result, error) {
	dc := s.dc
	name := dc.SecretNameOrDefault()
	s.status.SecretName = name
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: dc.Namespace, Name: name}, sec)
	switch {
	case err == nil && !metav1.IsControlledBy(sec, dc):
		s.Refuse(iotv1.ConditionReady, reconcile.ReasonNameConflict,
			fmt.Sprintf("Secret %s exists and was not made by this DeviceCredential: set spec.secretName to a free name (in a new DeviceCredential)", name))
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
	case err == nil:
		if err := s.record(sec.Data[CredsKey]); err != nil {
			s.Fail(iotv1.ConditionReady, iotv1.ReasonSecretMissing, fmt.Sprintf("Secret %s holds no valid credentials in %s: %v", name, CredsKey, err))
			return ctrl.Result{}, nil
		}
	case !apierrors.IsNotFound(err):
		s.Set(iotv1.ConditionReady, metav1.ConditionUnknown, iotv1.ReasonBrokerNotReady, err.Error())
		return ctrl.Result{}, err
	case s.status.UserKey != "":
		s.Fail(iotv1.ConditionReady, iotv1.ReasonSecretMissing, fmt.Sprintf(
			"Secret %s with the credentials of user %s is gone; they stay valid until revoked: delete this DeviceCredential (which revokes them) and create a new one", name, s.status.UserKey))
		return ctrl.Result{}, nil
	case dc.Spec.Revoked:
		return ctrl.Result{}, nil // revoked before anything was issued: nothing to issue
	default:
		if res, err := r.issue(ctx, s, name); err != nil || !s.issued {
			return res, err
		}
	}
	if s.status.ExpiresAt != nil {
		left := s.status.ExpiresAt.Sub(s.now)
		if left <= 0 {
			s.Fail(iotv1.ConditionReady, iotv1.ReasonCredentialExpired, fmt.Sprintf("the credentials of device %s expired at %s", dc.Spec.DeviceID, s.status.ExpiresAt.UTC().Format(time.RFC3339)))
			return ctrl.Result{}, nil
		}
		s.after(left + time.Second)
	}
	s.Set(iotv1.ConditionReady, metav1.ConditionTrue, iotv1.ReasonIssued,
		fmt.Sprintf("the credentials of device %s (user %s) are in Secret %s, key %s", dc.Spec.DeviceID, s.status.UserKey, name, CredsKey))
	return ctrl.Result{}, nil
}

// issue issues the credentials with the broker's authority into a new Secret name.
func (r *DeviceCredentialReconciler) issue(ctx context.Context, s *deviceCredentialScope, name string) (ctrl.Result, error) {
	dc := s.dc
	b, err := r.Brokers.Broker(ctx, dc.Namespace, dc.Spec.Broker)
	if apierrors.IsNotFound(err) {
		s.Fail(iotv1.ConditionReady, iotv1.ReasonBrokerNotFound, fmt.Sprintf("FleetBroker %s is not found in namespace %s", dc.Spec.Broker, dc.Namespace))
		return ctrl.Result{RequeueAfter: credentialBrokerRetry}, nil
	}
	if err != nil {
		s.Set(iotv1.ConditionReady, metav1.ConditionUnknown, iotv1.ReasonBrokerNotReady, err.Error())
		return ctrl.Result{}, err
	}
	_, a, err := readAuthority(ctx, r.APIReader, dc.Namespace, b)
	if err != nil {
		s.Fail(iotv1.ConditionReady, iotv1.ReasonBrokerNotReady, fmt.Sprintf("FleetBroker %s's authority: %v", dc.Spec.Broker, err))
		return ctrl.Result{RequeueAfter: credentialBrokerRetry}, nil
	}
	// Held from the issue on: the credentials leave Kubernetes, and only the revocation takes them back.
	if err := r.finalizer.Ensure(ctx, dc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var expires time.Duration
	if dc.Spec.ExpiresAfter != nil {
		expires = dc.Spec.ExpiresAfter.Duration
	}
	labels := make(map[string]string, len(dc.Spec.Labels))
	for k, v := range dc.Spec.Labels {
		labels[k] = string(v)
	}
	creds, err := a.IssueWithLabels(auth.RoleDevice, dc.Spec.DeviceID, expires, labels)
	if err != nil {
		s.Fail(iotv1.ConditionReady, iotv1.ReasonBrokerNotReady, fmt.Sprintf("issue the credentials: %v", err))
		return ctrl.Result{RequeueAfter: credentialBrokerRetry}, nil
	}
	sec := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: dc.Namespace, Name: name, Labels: oplabels.Labels(credentialAppName, dc.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dc, iotv1.GroupVersion.WithKind("DeviceCredential"))}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{CredsKey: creds},
	}
	err = r.Client.Create(ctx, sec)
	if apierrors.IsAlreadyExists(err) {
		// Made a moment ago (a reconcile that did not see it yet), or someone else's: the next reconcile
		// reads it. These credentials were never given to anyone.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if err != nil {
		return s.ApplyFailed(iotv1.ConditionReady, sec, err, reconcile.Refusal{})
	}
	if err := s.record(creds); err != nil {
		return ctrl.Result{}, err
	}
	s.Normalf(iotv1.EventIssued, "issued the credentials of device %s (user %s) into Secret %s", dc.Spec.DeviceID, s.status.UserKey, name)
	return ctrl.Result{}, nil
}

// record puts what the credentials creds are into the status.
func (s *deviceCredentialScope) record(creds []byte) error {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return err
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return err
	}
	if uc.Name != s.dc.Spec.DeviceID {
		return fmt.Errorf("they are device %q's, not %q's", uc.Name, s.dc.Spec.DeviceID)
	}
	s.status.UserKey = uc.Subject
	s.status.IssuedAt = ptrTime(time.Unix(uc.IssuedAt, 0))
	s.status.ExpiresAt = nil
	if uc.Expires > 0 {
		s.status.ExpiresAt = ptrTime(time.Unix(uc.Expires, 0))
	}
	s.issued = true
	return nil
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.UTC())
	return &mt
}

// reconcileRevocation revokes the credentials once spec.revoked is set; Revoked and Ready say so.
func (r *DeviceCredentialReconciler) reconcileRevocation(ctx context.Context, s *deviceCredentialScope) (ctrl.Result, error) {
	dc := s.dc
	if !dc.Spec.Revoked {
		s.Set(iotv1.ConditionRevoked, metav1.ConditionFalse, iotv1.ReasonNotRevoked,
			"the credentials are valid until this DeviceCredential is deleted or spec.revoked is set")
		return ctrl.Result{}, nil
	}
	switch {
	case s.status.UserKey == "":
		s.Set(iotv1.ConditionRevoked, metav1.ConditionTrue, iotv1.ReasonRevoked, "revoked before any credentials were issued")
	case revokedAlready(dc):
	default:
		servers, err := r.revoke(ctx, dc, s.status.UserKey)
		if err != nil {
			s.Fail(iotv1.ConditionRevoked, iotv1.ReasonRevocationPending, fmt.Sprintf("revoking user %s: %v", s.status.UserKey, err))
			s.Set(iotv1.ConditionReady, metav1.ConditionFalse, iotv1.ReasonRevocationPending, "the credentials are being revoked")
			return ctrl.Result{RequeueAfter: credentialBrokerRetry}, nil
		}
		s.status.RevokedAt = ptrTime(s.now)
		s.Set(iotv1.ConditionRevoked, metav1.ConditionTrue, iotv1.ReasonRevoked,
			fmt.Sprintf("user %s is revoked in FleetBroker %s's account", s.status.UserKey, dc.Spec.Broker))
		s.Normalf(iotv1.EventRevoked, "revoked the credentials of device %s (user %s); servers told: %v", dc.Spec.DeviceID, s.status.UserKey, servers)
	}
	s.Set(iotv1.ConditionReady, metav1.ConditionFalse, iotv1.ReasonRevoked, "the credentials are revoked")
	return ctrl.Result{}, nil
}
