package iot

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/jwt/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	policyv1 "k8s.io/api/policy/v1"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/broker"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// reconcileAuthority reads the fleet's authority: the Secret spec.authority.secretName names (the
// user's: read, never changed), or the one the operator generated. A generated authority is made once;
// one that disappears after the servers were configured with it (the config Secret says which operator
// key they trust) is reported as lost, never silently replaced: new keys would invalidate every device
// credential.
func (r *FleetBrokerReconciler) reconcileAuthority(ctx context.Context, s *fleetBrokerScope) (ctrl.Result, error) {
	b := s.broker
	name := brokerAuthoritySecretOf(b)
	byo := b.Spec.Authority.SecretName != ""
	var live corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, &live)
	switch {
	case apierrors.IsNotFound(err) && byo:
		s.Fail(iotv1.ConditionAuthority, iotv1.ReasonAuthorityNotFound,
			fmt.Sprintf("Secret %q named by spec.authority.secretName does not exist in namespace %q; create it from a `fleet-auth init` directory (kubectl create secret generic %s --from-file=DIR)", name, b.Namespace, name))
		return ctrl.Result{RequeueAfter: brokerRetry}, nil
	case apierrors.IsNotFound(err):
		return r.generateAuthority(ctx, s)
	case err != nil:
		s.Set(iotv1.ConditionAuthority, metav1.ConditionUnknown, iotv1.ReasonAuthorityInvalid, "the authority Secret could not be read: "+err.Error())
		return ctrl.Result{}, fmt.Errorf("read Secret %s: %w", name, err)
	case !byo && !metav1.IsControlledBy(&live, b):
		s.Refuse(iotv1.ConditionAuthority, iotv1.ReasonBrokerNameConflict,
			fmt.Sprintf("Secret %s already exists and was not made for this FleetBroker; it is left untouched (name it in spec.authority.secretName to use it as the authority)", name))
		return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
	}
	a, err := auth.FromData(live.Data)
	if err == nil {
		err = usableAuthority(a)
	}
	if err != nil {
		s.Refuse(iotv1.ConditionAuthority, iotv1.ReasonAuthorityInvalid, fmt.Sprintf("Secret %s does not hold a usable fleet authority: %v", name, err))
		return ctrl.Result{}, nil
	}
	s.authority = a
	s.status.AuthoritySecret = name
	if byo {
		s.Set(iotv1.ConditionAuthority, metav1.ConditionTrue, iotv1.ReasonAuthorityProvided, fmt.Sprintf("the fleet authority is read from Secret %s", name))
	} else {
		s.Set(iotv1.ConditionAuthority, metav1.ConditionTrue, iotv1.ReasonAuthorityGenerated, fmt.Sprintf("the fleet authority the operator generated is in Secret %s", name))
	}
	return ctrl.Result{}, nil
}

// generateAuthority makes the broker's authority Secret, unless the servers already trust an authority
// (the config Secret names its operator key): that one was lost, and only the user may decide to start
// over with new keys.
func (r *FleetBrokerReconciler) generateAuthority(ctx context.Context, s *fleetBrokerScope) (ctrl.Result, error) {
	b := s.broker
	name := brokerAuthoritySecretName(b)
	var cfg corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: brokerConfigSecretName(b)}, &cfg)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("read Secret %s: %w", brokerConfigSecretName(b), err)
	}
	if key := cfg.Annotations[brokerOperatorKeyAnnotation]; err == nil && key != "" && metav1.IsControlledBy(&cfg, b) {
		s.Fail(iotv1.ConditionAuthority, iotv1.ReasonAuthorityLost, fmt.Sprintf(
			"Secret %s, the generated fleet authority (operator %s) the servers trust, is gone; the operator does not make new keys by itself, since every device credential would stop working. Restore the Secret from a backup, or delete Secret %s to start over with new keys (docs/fleet-broker.md)",
			name, key, brokerConfigSecretName(b)))
		return ctrl.Result{RequeueAfter: brokerRetry}, nil
	}
	a, err := auth.Init()
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("generate the fleet authority: %w", err)
	}
	data, err := a.Data()
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("generate the fleet authority: %w", err)
	}
	secret := brokerAuthoritySecret(b, data)
	if ok, res, err := s.ApplyWith(ctx, secret, iotv1.ConditionAuthority, apply.Options{Live: apply.ReadFrom(r.APIReader)}); !ok {
		return res, err
	}
	s.Normalf(reconcile.EventCreated, "Generated a new fleet authority (operator, accounts and signing keys) into Secret %s", name)
	s.authority = a
	s.status.AuthoritySecret = name
	s.Set(iotv1.ConditionAuthority, metav1.ConditionTrue, iotv1.ReasonAuthorityGenerated, fmt.Sprintf("the fleet authority the operator generated is in Secret %s", name))
	return ctrl.Result{}, nil
}

// usableAuthority says why a cannot run a broker: the servers need the operator, system and fleet
// account JWTs, and the operator's credentials need the operator role's signing key, one the account
// lists.
func usableAuthority(a *auth.Authority) error {
	if a.OperatorJWT == "" || a.SystemJWT == "" || a.AccountJWT == "" {
		return errors.New("operator.jwt, system.jwt and account.jwt are required")
	}
	if _, err := jwt.DecodeOperatorClaims(a.OperatorJWT); err != nil {
		return fmt.Errorf("operator.jwt: %w", err)
	}
	ac, err := jwt.DecodeAccountClaims(a.AccountJWT)
	if err != nil {
		return fmt.Errorf("account.jwt: %w", err)
	}
	if _, err := jwt.DecodeAccountClaims(a.SystemJWT); err != nil {
		return fmt.Errorf("system.jwt: %w", err)
	}
	kp := a.SigningKeys[auth.RoleOperator]
	if kp == nil {
		return fmt.Errorf("%s is required", auth.SigningKeyFile(auth.RoleOperator))
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return err
	}
	if !ac.SigningKeys.Contains(pub) {
		return fmt.Errorf("%s is not a signing key of the fleet account", auth.SigningKeyFile(auth.RoleOperator))
	}
	return nil
}

// reconcileCertificate asks cert-manager for the servers' certificate when spec.tls says so.
func (r *FleetBrokerReconciler) reconcileCertificate(ctx context.Context, s *fleetBrokerScope) (ctrl.Result, error) {
	desired := brokerCertificate(s.broker)
	if desired == nil {
		s.Drop(iotv1.ConditionBrokerCertificate)
		if !r.Capabilities.CertManager {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, s.DeleteIfControlled(ctx, &cmv1.Certificate{}, s.broker.Name)
	}
	if !r.Capabilities.CertManager {
		s.Fail(iotv1.ConditionBrokerCertificate, iotv1.ReasonBrokerAPINotAvailable,
			"spec.tls needs cert-manager (cert-manager.io/v1 Certificate), which this cluster does not serve; install cert-manager, then restart the operator")
		return ctrl.Result{}, nil
	}
	if ok, res, err := s.Apply(ctx, desired, iotv1.ConditionBrokerCertificate); !ok {
		return res, err
	}
	if ready := reconcile.CertificateReady(desired); ready.Ready {
		s.Set(iotv1.ConditionBrokerCertificate, metav1.ConditionTrue, iotv1.ReasonBrokerApplied, ready.Message)
	} else {
		s.Set(iotv1.ConditionBrokerCertificate, metav1.ConditionFalse, iotv1.ReasonBrokerCertificatePending, ready.Message)
	}
	return ctrl.Result{}, nil
}

// reconcileConfig renders the servers' configuration into the config Secret and keeps the operator's
// own credentials in theirs. The route password is made once and kept in the config Secret.
func (r *FleetBrokerReconciler) reconcileConfig(ctx context.Context, s *fleetBrokerScope) (ctrl.Result, error) {
	b := s.broker
	if s.authority == nil {
		s.Set(iotv1.ConditionBrokerConfig, metav1.ConditionFalse, iotv1.ReasonWaitingForAuthority, "held until the authority is usable; the servers keep the configuration they have")
		return ctrl.Result{}, nil
	}
	password, err := r.routePassword(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	conf, err := broker.Render(brokerServerConfig(b, password), s.authority)
	if err != nil {
		s.Refuse(iotv1.ConditionBrokerConfig, iotv1.ReasonAuthorityInvalid, "the servers' configuration cannot be rendered: "+err.Error())
		return ctrl.Result{}, nil
	}
	// The operator JWT names the key; a brought authority may lack the operator's seed.
	oc, err := jwt.DecodeOperatorClaims(s.authority.OperatorJWT)
	if err != nil {
		return ctrl.Result{}, err
	}
	operatorKey := oc.Subject
	if ok, res, err := s.ApplyWith(ctx, brokerConfigSecret(b, conf, password, operatorKey), iotv1.ConditionBrokerConfig, apply.Options{Live: apply.ReadFrom(r.APIReader)}); !ok {
		return res, err
	}
	creds, err := r.operatorCreds(ctx, b, s.authority)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ok, res, err := s.ApplyWith(ctx, brokerCredsSecret(b, creds), iotv1.ConditionBrokerConfig, apply.Options{Live: apply.ReadFrom(r.APIReader)}); !ok {
		return res, err
	}
	s.configDigest = brokerConfigDigest(conf)
	s.status.OperatorCredentialsSecret = brokerCredsSecretName(b)
	s.Set(iotv1.ConditionBrokerConfig, metav1.ConditionTrue, iotv1.ReasonBrokerApplied,
		fmt.Sprintf("Secret %s holds the servers' configuration and Secret %s the operator's credentials", brokerConfigSecretName(b), brokerCredsSecretName(b)))
	return ctrl.Result{}, nil
}

// routePassword is the route password the config Secret holds, or a new one when there is none (or the
// Secret is not the broker's: applying it then reports the conflict).
func (r *FleetBrokerReconciler) routePassword(ctx context.Context, b *iotv1.FleetBroker) (string, error) {
	var cfg corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: brokerConfigSecretName(b)}, &cfg)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("read Secret %s: %w", brokerConfigSecretName(b), err)
	}
	if pw := string(cfg.Data[BrokerRoutePasswordKey]); err == nil && metav1.IsControlledBy(&cfg, b) && validRoutePassword(pw) {
		return pw, nil
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(buf), nil
}

// validRoutePassword: one the operator made (base64url, long enough).
func validRoutePassword(pw string) bool {
	if len(pw) < 24 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(pw)
	return err == nil
}

// operatorCreds are the operator's credentials the creds Secret holds while they are valid for a (issued
// by its operator signing key for its fleet account, not expired), or new ones.
func (r *FleetBrokerReconciler) operatorCreds(ctx context.Context, b *iotv1.FleetBroker, a *auth.Authority) ([]byte, error) {
	var live corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: brokerCredsSecretName(b)}, &live)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("read Secret %s: %w", brokerCredsSecretName(b), err)
	}
	if creds := live.Data[BrokerCredentialsKey]; err == nil && metav1.IsControlledBy(&live, b) && credsIssuedBy(creds, a) {
		return creds, nil
	}
	return a.Issue(auth.RoleOperator, auth.OperatorUser, 0)
}

// credsIssuedBy says whether creds are the operator role's, signed by a's operator signing key for a's
// fleet account, and unexpired.
func credsIssuedBy(creds []byte, a *auth.Authority) bool {
	_, name, role, err := auth.UserOf(creds)
	if err != nil || role != auth.RoleOperator || name != auth.OperatorUser {
		return false
	}
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return false
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return false
	}
	account, err := a.AccountKey()
	if err != nil {
		return false
	}
	signer, err := a.SigningKeys[auth.RoleOperator].PublicKey()
	if err != nil {
		return false
	}
	var vr jwt.ValidationResults
	uc.Validate(&vr)
	return uc.Issuer == signer && uc.IssuerAccount == account && !vr.IsBlocking(true)
}

// reconcileServices applies the headless cluster Service and the client Service.
func (r *FleetBrokerReconciler) reconcileServices(ctx context.Context, s *fleetBrokerScope) (ctrl.Result, error) {
	if ok, res, err := s.Apply(ctx, brokerClusterService(s.broker), iotv1.ConditionBrokerService); !ok {
		return res, err
	}
	clientSvc := brokerClientService(s.broker)
	if ok, res, err := s.Apply(ctx, clientSvc, iotv1.ConditionBrokerService); !ok {
		return res, err
	}
	s.Set(iotv1.ConditionBrokerService, metav1.ConditionTrue, iotv1.ReasonBrokerApplied,
		fmt.Sprintf("Service %s (%s) serves clients and Service %s the servers' routes", clientSvc.Name, clientSvc.Spec.Type, brokerClusterServiceName(s.broker)))
	return ctrl.Result{}, nil
}

// reconcileStatefulSet applies the servers once their configuration is applied, and reads how many are
// ready.
func (r *FleetBrokerReconciler) reconcileStatefulSet(ctx context.Context, s *fleetBrokerScope) (ctrl.Result, error) {
	if s.configDigest == "" {
		s.Set(iotv1.ConditionServers, metav1.ConditionFalse, iotv1.ReasonWaitingForAuthority, "held until the configuration is applied; running servers are left as they are")
		return ctrl.Result{}, nil
	}
	desired := brokerStatefulSet(s.broker, s.configDigest)
	if ok, res, err := s.Apply(ctx, desired, iotv1.ConditionServers); !ok {
		return res, err
	}
	// desired now holds the live StatefulSet (see apply.Applier.Apply).
	s.status.ReadyServers = desired.Status.ReadyReplicas
	if brokerServersReady(desired, s.broker.Spec.Servers) {
		s.Set(iotv1.ConditionServers, metav1.ConditionTrue, iotv1.ReasonServersReady, fmt.Sprintf("%d of %d servers are ready", desired.Status.ReadyReplicas, s.broker.Spec.Servers))
	} else {
		s.Set(iotv1.ConditionServers, metav1.ConditionFalse, iotv1.ReasonServersNotReady, fmt.Sprintf("%d of %d servers are ready", desired.Status.ReadyReplicas, s.broker.Spec.Servers))
	}
	return ctrl.Result{}, nil
}

// brokerServersReady: the StatefulSet controller saw the latest spec and every server is ready.
func brokerServersReady(sts *appsv1.StatefulSet, servers int32) bool {
	return sts.Status.ObservedGeneration >= sts.Generation && sts.Status.ReadyReplicas >= servers && servers > 0
}

// reconcileDisruptionBudget applies the PodDisruptionBudget of 3 or more servers, and removes it for one.
func (r *FleetBrokerReconciler) reconcileDisruptionBudget(ctx context.Context, s *fleetBrokerScope) (ctrl.Result, error) {
	desired := brokerPDB(s.broker)
	if desired == nil {
		return ctrl.Result{}, s.DeleteIfControlled(ctx, &policyv1.PodDisruptionBudget{}, s.broker.Name)
	}
	_, res, err := s.Apply(ctx, desired, iotv1.ConditionServers)
	return res, err
}
