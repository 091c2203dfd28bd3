package irc

import (
	"context"
	"fmt"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The steps below are the parts ErgoNetwork and SojuBouncer share (the builders behind them are shared in
// internal/irc/ircnet): each kind's step builds its object and calls one of these.

// applyCertificate asks cert-manager for desired, or deletes the Certificate named name that the operator
// made when desired is nil (spec.tls removed). Without cert-manager a wanted Certificate is APINotAvailable,
// with a Warning when that is news against s.Before (the conditions as the reconcile read them): only an
// installed API and a restart, or a spec change, change it, so a later reconcile that finds it again sends none.
func applyCertificate(ctx context.Context, s *reconcile.Session, certManager bool, desired *cmv1.Certificate, name string) (ctrl.Result, error) {
	if desired == nil {
		s.Drop(ircv1.ConditionCertificate)
		if !certManager {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, s.DeleteIfControlled(ctx, &cmv1.Certificate{}, name)
	}
	if !certManager {
		s.Fail(ircv1.ConditionCertificate, reconcile.ReasonAPINotAvailable, "spec.tls needs cert-manager (cert-manager.io/v1 Certificate), which this cluster does not serve; install cert-manager, then restart the operator")
		return ctrl.Result{}, nil
	}
	if ok, res, err := s.Apply(ctx, desired, ircv1.ConditionCertificate); !ok {
		return res, err
	}
	// desired now holds the live Certificate (see apply.Applier.Apply).
	if ready := reconcile.CertificateReady(desired); ready.Ready {
		s.Set(ircv1.ConditionCertificate, metav1.ConditionTrue, ircv1.ReasonReady, ready.Message)
	} else {
		s.Set(ircv1.ConditionCertificate, metav1.ConditionFalse, ircv1.ReasonCertificatePending, ready.Message)
	}
	return ctrl.Result{}, nil
}

// applyService applies desired and, once it is applied, sets *serviceHost to its in-cluster address. ok is
// false when the apply did not go through (res and err say what to do).
func applyService(ctx context.Context, s *reconcile.Session, desired *corev1.Service, serviceHost *string) (bool, ctrl.Result, error) {
	if ok, res, err := s.Apply(ctx, desired, ircv1.ConditionService); !ok {
		return false, res, err
	}
	*serviceHost = fmt.Sprintf("%s.%s.svc", desired.Name, desired.Namespace)
	s.Set(ircv1.ConditionService, metav1.ConditionTrue, ircv1.ReasonApplied,
		fmt.Sprintf("Service %s has %d ports", desired.Name, len(desired.Spec.Ports)))
	return true, ctrl.Result{}, nil
}

// applyRoute applies desired and sets *routeHost to the host a router admitted (the spec's until one
// does), or deletes the Route named name that the operator made when desired is nil (spec.route removed).
// Without the Route API a wanted Route is APINotAvailable, warned once as in applyCertificate.
func applyRoute(ctx context.Context, s *reconcile.Session, routes bool, desired *routev1.Route, name string, routeHost *string) (ctrl.Result, error) {
	if desired == nil {
		s.Drop(ircv1.ConditionRoute)
		*routeHost = ""
		if !routes {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, s.DeleteIfControlled(ctx, &routev1.Route{}, name)
	}
	if !routes {
		*routeHost = ""
		s.Fail(ircv1.ConditionRoute, reconcile.ReasonAPINotAvailable, "spec.route needs the OpenShift Route API (route.openshift.io/v1), which this cluster does not serve; remove spec.route and expose the Service another way")
		return ctrl.Result{}, nil
	}
	if ok, res, err := s.Apply(ctx, desired, ircv1.ConditionRoute); !ok {
		return res, err
	}
	host, admitted := admittedHost(desired)
	if host == "" {
		host = desired.Spec.Host
	}
	*routeHost = host
	msg := fmt.Sprintf("Route %s admitted with host %s", desired.Name, host)
	if !admitted {
		msg = fmt.Sprintf("Route %s applied; no router has admitted it yet", desired.Name)
	}
	s.Set(ircv1.ConditionRoute, metav1.ConditionTrue, ircv1.ReasonApplied, msg)
	return ctrl.Result{}, nil
}

// admittedHost is the host of the first router that admitted the Route.
func admittedHost(rt *routev1.Route) (string, bool) {
	for _, in := range rt.Status.Ingress {
		for _, c := range in.Conditions {
			if c.Type == routev1.RouteAdmitted && c.Status == corev1.ConditionTrue {
				return in.Host, true
			}
		}
	}
	return "", false
}
