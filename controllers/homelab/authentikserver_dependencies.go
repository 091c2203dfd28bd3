package homelab

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/homelab/authentik"
)

// dependencyReady reads a dependency's Ready condition: it counts only when it describes the dependency's
// current generation.
func dependencyReady(conds []metav1.Condition, generation int64) (bool, string) {
	c := meta.FindStatusCondition(conds, homelabv1.ConditionReady)
	switch {
	case c == nil || c.ObservedGeneration < generation:
		return false, "it has not reported on its current spec yet"
	case c.Status != metav1.ConditionTrue:
		return false, fmt.Sprintf("it is not Ready (%s: %s)", c.Reason, c.Message)
	default:
		return true, ""
	}
}

// missing records a dependency that does not exist.
func (s *authentikServerScope) missing(condType, kind string, key types.NamespacedName, field string) {
	s.waiting = true
	msg := fmt.Sprintf("%s %s named by spec.%s does not exist; authentik waits for it", kind, key, field)
	s.Fail(condType, homelabv1.ReasonMissingDependency, msg)
}

// notReady records a dependency that exists but is not Ready.
func (s *authentikServerScope) notReady(condType, kind string, key types.NamespacedName, why string) {
	s.waiting = true
	s.Set(condType, metav1.ConditionFalse, homelabv1.ReasonWaitingForDependency,
		fmt.Sprintf("%s %s: %s; authentik waits for it", kind, key, why))
}

// sameNamespace refuses a database or redis reference to another namespace: the pods read its Secret.
func (s *authentikServerScope) sameNamespace(condType, field string, key types.NamespacedName) bool {
	if key.Namespace == s.server.Namespace {
		return true
	}
	s.notAllowed(condType, fmt.Sprintf("spec.%s names %s in another namespace: authentik's pods read its Secret, and pods read Secrets only from their own namespace; create it in %q", field, key, s.server.Namespace))
	return false
}

// notAllowed records a dependency the AuthentikServer may not use, with a Warning event when it is new.
func (s *authentikServerScope) notAllowed(condType, msg string) {
	s.waiting = true
	s.Fail(condType, homelabv1.ReasonDependencyNotAllowed, msg)
}

// reconcileDomainDependency waits for the Domain: Ready, with a Gateway to attach the route to.
func (r *AuthentikServerReconciler) reconcileDomainDependency(ctx context.Context, s *authentikServerScope) (ctrl.Result, error) {
	key := dependencyKey(s.server.Spec.Domain, s.server.Namespace)
	var d homelabv1.Domain
	err := r.Client.Get(ctx, key, &d)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("read Domain %s: %w", key, err)
	}
	// Another namespace's Domain serves this one only when it says so; one that does not exist gets the
	// same answer, so that the condition does not tell which Domains another namespace has.
	if key.Namespace != s.server.Namespace && (err != nil || !domainAllowsNamespace(&d, s.server.Namespace)) {
		s.notAllowed(homelabv1.ConditionDomain, foreignDomainMessage(key.String(), s.server.Namespace))
		s.status.URL = ""
		return ctrl.Result{}, nil
	}
	if err != nil {
		s.missing(homelabv1.ConditionDomain, "Domain", key, "domain")
		return ctrl.Result{}, nil
	}
	if ok, why := dependencyReady(d.Status.Conditions, d.Generation); !ok {
		s.notReady(homelabv1.ConditionDomain, "Domain", key, why)
		return ctrl.Result{}, nil
	}
	s.hostname, s.gateway = d.Spec.Hostname, d.Status.Gateway
	s.status.URL = "https://" + authentik.Host(d.Spec.Hostname) + "/"
	s.Set(homelabv1.ConditionDomain, metav1.ConditionTrue, homelabv1.ReasonReady,
		fmt.Sprintf("Domain %s is Ready: authentik is served as %s", key, authentik.Host(d.Spec.Hostname)))
	return ctrl.Result{}, nil
}

// reconcileDatabaseDependency waits for the PostgresDatabase: Ready, with its Secret.
func (r *AuthentikServerReconciler) reconcileDatabaseDependency(ctx context.Context, s *authentikServerScope) (ctrl.Result, error) {
	key := dependencyKey(s.server.Spec.Database, s.server.Namespace)
	if !s.sameNamespace(homelabv1.ConditionDatabase, "database", key) {
		return ctrl.Result{}, nil
	}
	var db homelabv1.PostgresDatabase
	if err := r.Client.Get(ctx, key, &db); apierrors.IsNotFound(err) {
		s.missing(homelabv1.ConditionDatabase, "PostgresDatabase", key, "database")
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("read PostgresDatabase %s: %w", key, err)
	}
	if ok, why := dependencyReady(db.Status.Conditions, db.Generation); !ok {
		s.notReady(homelabv1.ConditionDatabase, "PostgresDatabase", key, why)
		return ctrl.Result{}, nil
	}
	if db.Status.SecretName == "" {
		s.notReady(homelabv1.ConditionDatabase, "PostgresDatabase", key, "it reports no Secret yet")
		return ctrl.Result{}, nil
	}
	s.databaseSecret = db.Status.SecretName
	s.Set(homelabv1.ConditionDatabase, metav1.ConditionTrue, homelabv1.ReasonReady,
		fmt.Sprintf("PostgresDatabase %s is Ready; its Secret %s holds the credentials", key, db.Status.SecretName))
	return ctrl.Result{}, nil
}

// reconcileRedisDependency waits for the RedisConnection: Ready (its server answers PING).
func (r *AuthentikServerReconciler) reconcileRedisDependency(ctx context.Context, s *authentikServerScope) (ctrl.Result, error) {
	key := dependencyKey(s.server.Spec.Redis, s.server.Namespace)
	if !s.sameNamespace(homelabv1.ConditionRedis, "redis", key) {
		return ctrl.Result{}, nil
	}
	var rc homelabv1.RedisConnection
	if err := r.Client.Get(ctx, key, &rc); apierrors.IsNotFound(err) {
		s.missing(homelabv1.ConditionRedis, "RedisConnection", key, "redis")
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("read RedisConnection %s: %w", key, err)
	}
	if ok, why := dependencyReady(rc.Status.Conditions, rc.Generation); !ok {
		s.notReady(homelabv1.ConditionRedis, "RedisConnection", key, why)
		return ctrl.Result{}, nil
	}
	s.redisSecret = rc.Spec.Secret
	s.Set(homelabv1.ConditionRedis, metav1.ConditionTrue, homelabv1.ReasonReady,
		fmt.Sprintf("RedisConnection %s is Ready; its Secret %s holds the credentials", key, rc.Spec.Secret))
	return ctrl.Result{}, nil
}

// hold marks a part as waiting for the dependencies, or returns false when they are all Ready. What runs
// already is kept: a dependency that stops being Ready for a moment does not tear authentik down.
func (s *authentikServerScope) hold(condType string) bool {
	if !s.waiting {
		return false
	}
	if c := meta.FindStatusCondition(*s.Conditions, condType); c == nil || c.Status != metav1.ConditionTrue {
		s.Set(condType, metav1.ConditionFalse, homelabv1.ReasonWaitingForDependency,
			"held until the Domain, the PostgresDatabase and the RedisConnection are all Ready")
	}
	return true
}
