package irc

import (
	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// partConditions are the per-part condition types in the order Ready reports them.
//
// The claim comes after the Deployment: with a WaitForFirstConsumer storage class (the usual default) it
// binds only once the Deployment's pod is scheduled, so while both wait the Deployment is the one to read.
var partConditions = []string{
	ircv1.ConditionOperCredentials,
	ircv1.ConditionCertificate,
	ircv1.ConditionConfig,
	ircv1.ConditionDeployment,
	ircv1.ConditionStorage,
	ircv1.ConditionService,
	ircv1.ConditionRoute,
}

// summarize fills the Ready condition and observedGeneration from what the steps found.
func (s *ergoNetworkScope) summarize() *ircv1.ErgoNetworkStatus {
	s.status.ObservedGeneration = s.net.Generation
	s.status.NetworkName = s.net.Spec.EffectiveNetworkName()
	s.Summarize(readyOrder(s.net), ircv1.ReasonReady, "the network is running")
	return s.status
}

// readyOrder is the order Ready reports n's parts in: partConditions, and for a network made with
// spec.restore the Restored condition before the Deployment, which waits for it.
func readyOrder(n *ircv1.ErgoNetwork) []string {
	if n.Spec.Restore == nil {
		return partConditions
	}
	order := make([]string, 0, len(partConditions)+1)
	for _, t := range partConditions {
		if t == ircv1.ConditionDeployment {
			order = append(order, backupv1.ConditionRestored)
		}
		order = append(order, t)
	}
	return order
}
