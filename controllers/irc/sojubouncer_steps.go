package irc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	"github.com/platform-operator/platform-operator/internal/kit/monitoring"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// adminSettings reads the admin connection b uses. It returns the condition reason and message of a
// connection that cannot be used (a user error), or an error to retry.
func (r *SojuBouncerReconciler) adminSettings(ctx context.Context, b *ircv1.SojuBouncer) (*postgres.Settings, string, string, error) {
	key := r.adminSecretKey(b)
	if key.Name == "" {
		return nil, ircv1.ReasonAdminSecretMissing, "spec.database.adminSecretName is empty and the operator was started without --soju-database-secret: name a Secret with the admin connection", nil
	}
	if b.Spec.Database.AdminSecretName == "" && !postgres.NamespaceAllowed(key.Namespace, b.Namespace, r.DefaultAdminNamespaces) {
		// The operator-wide Secret is read only for the namespaces its owner listed.
		return nil, ircv1.ReasonAdminSecretNotAllowed, fmt.Sprintf("the operator-wide admin connection (--soju-database-secret %s) serves namespace %s and those listed by --soju-database-namespaces, not %q: name a Secret of this namespace in spec.database.adminSecretName, or ask the operator's administrator to list the namespace", key, key.Namespace, b.Namespace), nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ircv1.ReasonSecretNotFound, fmt.Sprintf("admin connection Secret %s not found", key), nil
		}
		return nil, "", "", fmt.Errorf("read admin connection Secret %s: %w", key, err)
	}
	settings, err := postgres.SettingsFromSecret(secret.Data)
	if err != nil {
		return nil, ircv1.ReasonAdminSecretInvalid, fmt.Sprintf("admin connection Secret %s: %v", key, err), nil
	}
	return &settings, "", "", nil
}

// newSojuProvisioner is how the SojuBouncer controller makes databases: on an admin connection nothing
// else checks, so its privileges are read first.
func newSojuProvisioner(cleanupTimeout time.Duration) *postgres.Provisioner {
	return &postgres.Provisioner{
		Kind: "SojuBouncer", ReleaseAnnotation: ircv1.AnnotationReleaseDatabase,
		Login: "the admin connection's user", CheckPrivileges: true,
		UnreachableRetry: DatabaseRetry, LoginErrorReason: ircv1.ReasonSQLFailed,
		DroppedReason: ircv1.ReasonDatabaseDropped, CleanupTimeout: cleanupTimeout,
	}
}

// reconcileDatabase makes the server hold the bouncer's role and database (the role owns it, since
// soju migrates its own schema) and writes the role's login to the Secret {name}-db. The password is
// made once and kept in that Secret; a Secret deleted by hand gets a new one, set on the role.
func (r *SojuBouncerReconciler) reconcileDatabase(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	admin, reason, msg, err := r.adminSettings(ctx, s.b)
	if err != nil {
		s.Set(ircv1.ConditionDatabase, metav1.ConditionUnknown, ircv1.ReasonWaiting, err.Error())
		return ctrl.Result{}, err
	}
	if admin == nil {
		// The Secret's own changes wake the bouncer (bouncersForSecret).
		s.Fail(ircv1.ConditionDatabase, reason, msg)
		return ctrl.Result{}, nil
	}
	name := soju.DatabaseName(s.b)
	secretName := soju.DatabaseSecretName(s.b)
	live := &corev1.Secret{}
	switch err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.b.Namespace, Name: secretName}, live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		s.Set(ircv1.ConditionDatabase, metav1.ConditionUnknown, ircv1.ReasonWaiting, "the database Secret could not be read: "+err.Error())
		return ctrl.Result{}, err
	default:
		live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if c := apply.Conflict(live, soju.DatabaseSecret(s.b, postgres.Settings{}), s.b); c != nil {
			s.Fail(ircv1.ConditionDatabase, reconcile.ReasonNameConflict, c.Error())
			return ctrl.Result{RequeueAfter: reconcile.ConflictRetry}, nil
		}
	}

	// Before anything exists on the server, and only then: a bouncer that never reached a server made
	// nothing there, and is deleted without waiting for one.
	if err := r.finalizer.Ensure(ctx, s.b); err != nil {
		s.Set(ircv1.ConditionDatabase, metav1.ConditionUnknown, ircv1.ReasonWaiting, "the finalizer could not be added: "+err.Error())
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	db, err := r.db.Ensure(ctx, postgres.Request{UID: s.b.UID, Admin: *admin, Name: name, Owner: soju.DatabaseOwner(s.b), Live: live})
	if err != nil {
		return ctrl.Result{}, err
	}
	if db.Updated != "" {
		s.Normal(reconcile.EventUpdated, db.Updated)
	}
	s.transport = db.Transport
	if !db.Ready() {
		s.Fail(ircv1.ConditionDatabase, db.Reason, db.Message)
		return ctrl.Result{RequeueAfter: db.RequeueAfter}, nil
	}

	applied, res, err := s.ApplyWith(ctx, soju.DatabaseSecret(s.b, db.Login), ircv1.ConditionDatabase, apply.Options{Live: apply.ReadFrom(r.APIReader)})
	if !applied {
		return res, err
	}
	s.login = &db.Login
	if !sojuRestorePending(s.b) {
		// Named (and so backed up by a Backup of the bouncer) once it holds the bouncer's data.
		s.status.DatabaseSecretName = secretName
	}
	s.Set(ircv1.ConditionDatabase, metav1.ConditionTrue, ircv1.ReasonReady,
		fmt.Sprintf("%s; the role's login is in Secret %s", db.Message, secretName))
	return ctrl.Result{}, nil
}

// reconcileAdminUser reads the first admin user's password from the user's Secret: it goes into the
// config digest (a new password rolls the pod, whose init container sets it) and is never kept anywhere
// else, nor written to a log, an event or the status.
func (r *SojuBouncerReconciler) reconcileAdminUser(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	u := s.b.Spec.AdminUser
	if u == nil {
		s.Drop(ircv1.ConditionAdminUser)
		return ctrl.Result{}, nil
	}
	key := soju.AdminPasswordKey(u)
	fail := func(reason, msg string) (ctrl.Result, error) {
		s.adminUsable = false
		s.Fail(ircv1.ConditionAdminUser, reason, msg)
		return ctrl.Result{}, nil
	}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.b.Namespace, Name: u.PasswordSecret.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return fail(ircv1.ReasonSecretNotFound, fmt.Sprintf("Secret %q named by spec.adminUser.passwordSecret does not exist in namespace %q", u.PasswordSecret.Name, s.b.Namespace))
		}
		s.adminUsable = false
		s.Set(ircv1.ConditionAdminUser, metav1.ConditionUnknown, ircv1.ReasonWaiting, "the admin user's Secret could not be read: "+err.Error())
		return ctrl.Result{}, err
	}
	v, ok := secret.Data[key]
	if !ok {
		return fail(ircv1.ReasonSecretKeyMissing, fmt.Sprintf("Secret %q has no key %q", u.PasswordSecret.Name, key))
	}
	if len(v) == 0 || strings.ContainsAny(string(v), "\r\n") {
		return fail(ircv1.ReasonInvalidPassword, fmt.Sprintf("key %q of Secret %q must hold the password as one non-empty line (sojudb reads one line); a trailing newline from echo counts", key, u.PasswordSecret.Name))
	}
	s.adminPassword = string(v)
	s.Set(ircv1.ConditionAdminUser, metav1.ConditionTrue, ircv1.ReasonReady,
		fmt.Sprintf("password of admin user %q read from key %q of Secret %q; soju's init container sets it at each start", u.Name, key, u.PasswordSecret.Name))
	return ctrl.Result{}, nil
}

// reconcileCertificate asks cert-manager for the bouncer's certificate.
func (r *SojuBouncerReconciler) reconcileCertificate(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	return applyCertificate(ctx, s.Session, r.Capabilities.CertManager, soju.Certificate(s.b), soju.CertificateName(s.b))
}

// reconcileConfig renders soju's config into the bouncer's ConfigMap, once the database's login is
// known (the config names the role and database).
func (r *SojuBouncerReconciler) reconcileConfig(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	if s.login == nil {
		s.Set(ircv1.ConditionConfig, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the database is ready; the running config is kept")
		return ctrl.Result{}, nil
	}
	// soju's driver (lib/pq) takes no prefer or allow: soju gets what they came to for the operator.
	login, err := soju.DriverLogin(*s.login, s.transport)
	if err != nil {
		// Unreachable while the database step sets login only after a session (and the Secret's sslmode
		// is one SettingsFromSecret accepts); held rather than rendered with a value soju refuses.
		msg := fmt.Sprintf("key %q of the admin connection Secret %s: %v; the running config is kept",
			postgres.KeySSLMode, r.adminSecretKey(s.b), err)
		if e := (*soju.SSLModeError)(nil); errors.As(err, &e) && e.Unseen {
			s.Set(ircv1.ConditionConfig, metav1.ConditionFalse, ircv1.ReasonWaiting, msg)
			return ctrl.Result{RequeueAfter: DatabaseRetry}, nil
		}
		s.Fail(ircv1.ConditionConfig, ircv1.ReasonAdminSecretInvalid, msg)
		return ctrl.Result{}, nil
	}
	rendered, err := soju.RenderConfig(s.b, login)
	if err != nil {
		// The CRD refuses what the encoder cannot write; reaching this is a spec admitted by an older CRD.
		s.Fail(ircv1.ConditionConfig, reconcile.ReasonApplyFailed, err.Error())
		return ctrl.Result{}, nil
	}
	if ok, res, err := s.Apply(ctx, soju.ConfigMap(s.b, rendered), ircv1.ConditionConfig); !ok {
		return res, err
	}
	s.rendered = rendered
	s.Set(ircv1.ConditionConfig, metav1.ConditionTrue, ircv1.ReasonApplied,
		fmt.Sprintf("soju config rendered into ConfigMap %s", soju.ConfigMapName(s.b)))
	return ctrl.Result{}, nil
}

// reconcileDeployment runs soju. The pod template carries a digest of the config, the database and
// admin passwords and the certificate, so a change of any of them rolls the pod and nothing else does.
func (r *SojuBouncerReconciler) reconcileDeployment(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	switch {
	case s.rendered == nil:
		s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the config is rendered; the running Deployment is kept")
		return ctrl.Result{}, nil
	case sojuRestorePending(s.b):
		// soju starts on the database only once the status records the restore: neither sojudb (the admin
		// user) nor soju's migrations ever run on the empty database, or on one the restore refused.
		s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the backup is restored (condition Restored)")
		return ctrl.Result{}, nil
	case !s.adminUsable:
		s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting,
			"held until the admin user's password is usable; the running Deployment is kept")
		return ctrl.Result{}, nil
	}
	var cert []byte
	if s.b.Spec.TLS != nil {
		tls := &corev1.Secret{}
		switch err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.b.Namespace, Name: soju.TLSSecretName(s.b)}, tls); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("read TLS secret: %w", err)
		default:
			cert = tls.Data[corev1.TLSCertKey]
		}
	}
	digest := soju.Digest(s.rendered, s.login.Password, s.adminPassword, cert)
	desired := soju.Deployment(s.b, soju.Options{Image: r.Image, OpenShift: r.Capabilities.OpenShift}, digest)
	if ok, res, err := s.Apply(ctx, desired, ircv1.ConditionDeployment); !ok {
		return res, err
	}
	if ready := reconcile.DeploymentReady(desired); ready.Ready {
		s.Set(ircv1.ConditionDeployment, metav1.ConditionTrue, ircv1.ReasonReady,
			"the soju pod is available; its init container made the admin user, if any")
	} else {
		s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonDeploymentPending, ready.Message)
	}
	return ctrl.Result{}, nil
}

// reconcileService exposes every listener inside the cluster.
func (r *SojuBouncerReconciler) reconcileService(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	if ok, res, err := applyService(ctx, s.Session, soju.Service(s.b), &s.status.ServiceHost); !ok {
		return res, err
	}
	s.status.Ports = soju.Ports(s.b)
	return ctrl.Result{}, nil
}

// reconcileMetrics asks the Prometheus Operator to scrape soju's metrics endpoint through a PodMonitor,
// or deletes the one the operator made when spec.metrics no longer enables it. Its condition is not part
// of Ready: a cluster without the Prometheus Operator still runs the bouncer, whose metrics port any
// other scraper can reach through the Service.
func (r *SojuBouncerReconciler) reconcileMetrics(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	desired := soju.PodMonitor(s.b)
	if desired == nil {
		s.Drop(ircv1.ConditionMetricsMonitor)
		if !r.Capabilities.PodMonitors {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, s.DeleteIfControlled(ctx, &monitoring.PodMonitor{}, soju.PodMonitorName(s.b))
	}
	if !r.Capabilities.PodMonitors {
		// A Warning once, not on every reconcile: the bouncer is fine, only the PodMonitor is missing.
		s.Fail(ircv1.ConditionMetricsMonitor, reconcile.ReasonAPINotAvailable, fmt.Sprintf(
			"no PodMonitor: this cluster does not serve the Prometheus Operator's API (monitoring.coreos.com/v1 PodMonitor); soju serves its metrics on port %q (%d) of the pod and of Service %s for any other scraper; install the Prometheus Operator, then restart the operator",
			soju.MetricsPortName, soju.MetricsPort(s.b), soju.ServiceName(s.b)))
		return ctrl.Result{}, nil
	}
	if ok, res, err := s.Apply(ctx, desired, ircv1.ConditionMetricsMonitor); !ok {
		return res, err
	}
	s.Set(ircv1.ConditionMetricsMonitor, metav1.ConditionTrue, ircv1.ReasonApplied,
		fmt.Sprintf("PodMonitor %s scrapes port %q (%d) of the soju pod", desired.Name, soju.MetricsPortName, soju.MetricsPort(s.b)))
	return ctrl.Result{}, nil
}

// reconcileRoute exposes the TLS listener outside the cluster through an OpenShift Route.
func (r *SojuBouncerReconciler) reconcileRoute(ctx context.Context, s *sojuBouncerScope) (ctrl.Result, error) {
	return applyRoute(ctx, s.Session, r.Capabilities.Routes, soju.Route(s.b), soju.RouteName(s.b), &s.status.RouteHost)
}
