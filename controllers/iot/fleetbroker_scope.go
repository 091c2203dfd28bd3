package iot

import (
	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// fleetBrokerScope carries one reconcile of one FleetBroker from step to step.
type fleetBrokerScope struct {
	*reconcile.Session
	broker *iotv1.FleetBroker
	status *iotv1.FleetBrokerStatus

	// authority is the fleet's authority the servers trust, once the authority step read or made it;
	// nil holds the configuration and the servers as they are.
	authority *auth.Authority
	// configDigest is the digest of the configuration the config Secret holds (brokerConfigDigest), once
	// the config step applied it; "" holds the StatefulSet as it is.
	configDigest string
}

// newFleetBrokerScope starts one reconcile of b: its status is a copy the steps fill in.
func (r *FleetBrokerReconciler) newFleetBrokerScope(b *iotv1.FleetBroker) *fleetBrokerScope {
	status := b.Status.DeepCopy()
	return &fleetBrokerScope{
		Session: &reconcile.Session{Owner: b, Before: b.Status.Conditions, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		broker: b, status: status,
	}
}

// fleetBrokerParts are the part conditions in the order Ready reports them.
var fleetBrokerParts = []string{
	iotv1.ConditionAuthority,
	iotv1.ConditionBrokerCertificate,
	iotv1.ConditionBrokerConfig,
	iotv1.ConditionBrokerService,
	iotv1.ConditionServers,
}

// summarize fills Ready, observedGeneration and what the status says about the broker's children.
func (s *fleetBrokerScope) summarize() *iotv1.FleetBrokerStatus {
	s.status.ObservedGeneration = s.broker.Generation
	s.status.ClientURL = brokerClientURL(s.broker)
	s.status.Replicas = s.broker.BucketReplicas()
	s.Summarize(fleetBrokerParts, iotv1.ReasonReady, "every server is ready")
	return s.status
}
