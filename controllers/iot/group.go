package iot

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/kit/admit"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
)

// Options configure the iot controllers; flags.go fills them from the command line.
type Options struct {
	// MaxConcurrentReconciles is how many Deployments are reconciled at once; 1 when zero.
	MaxConcurrentReconciles int
	// Policy is which devices each namespace may target and which images may run; the zero Policy
	// allows no targeting.
	Policy Policy
	// NATS is the fleet's server, connected in the background; nil runs without NATS (every Deployment
	// says NATSNotConfigured).
	NATS *NATSOptions
	// Credentials verify devices' credential labels (--iot-fleet-account-jwt); nil verifies none.
	Credentials *auth.Verifier
	// Brokers finds the FleetBrokers DeviceCredentials name; nil finds none.
	Brokers Brokers
}

// Group is the iot API group as the manager sees it.
func Group(opts Options) manager.Group {
	d := &DeploymentReconciler{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, Policy: opts.Policy, NATS: opts.NATS, Credentials: opts.Credentials}
	return manager.NewGroup("iot", append(deploymentRows(d), deviceCredentialRow(&DeviceCredentialReconciler{Brokers: opts.Brokers}))...)
}

// groupOf is the group's Deployment rows, run by r (tests pass a reconciler they connected and watch).
func groupOf(r *DeploymentReconciler) manager.Group {
	return manager.NewGroup("iot", deploymentRows(r)...)
}

// deviceCredentialRow is the DeviceCredential controller, run by r.
func deviceCredentialRow(r *DeviceCredentialReconciler) manager.Row {
	return manager.Reconciler{Name: "DeviceCredential", Cache: deviceCredentialCache, Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
		return r.SetupWithManager(mgr)
	}}
}

// deploymentRows are the Deployment's controller and webhook, run by r.
func deploymentRows(r *DeploymentReconciler) []manager.Row {
	return []manager.Row{
		manager.Reconciler{Name: "Deployment", Setup: func(mgr ctrl.Manager, _ platform.Capabilities) error {
			return r.SetupWithManager(mgr)
		}},
		manager.Reconciler{Name: "FleetBroker", Cache: fleetBrokerCache, Setup: func(mgr ctrl.Manager, caps platform.Capabilities) error {
			return (&FleetBrokerReconciler{Capabilities: caps}).SetupWithManager(mgr)
		}},
		manager.Webhook{For: &iotv1.Deployment{}, Validator: func(ctrl.Manager) (admission.CustomValidator, error) {
			return admit.Typed(&DeploymentValidator{Policy: r.Policy}), nil
		}},
	}
}
