package irc

import (
	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
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

// scope carries one reconcile's working state from step to step.
type scope struct {
	*reconcile.Session
	net    *ircv1.ErgoNetwork
	status *ircv1.ErgoNetworkStatus

	// operHash is the bcrypt hash from the user's Secret; nil when the network has no oper.
	operHash []byte
	// operUsable is false when the network asks for an oper whose hash could not be read: config and
	// Deployment are then held as they are rather than rolled to a network without its oper.
	operUsable bool
	// configPrefix is the config digest's state after the ircd.yaml the ConfigMap holds
	// (ergo.ConfigDigestPrefix), once the config step ran.
	configPrefix []byte
}

func (r *ErgoNetworkReconciler) newScope(n *ircv1.ErgoNetwork) *scope {
	status := n.Status.DeepCopy()
	return &scope{
		Session: &reconcile.Session{Owner: n, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		net: n, status: status, operUsable: true,
	}
}

// summarize fills the Ready condition and observedGeneration from what the steps found.
func (s *scope) summarize() *ircv1.ErgoNetworkStatus {
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
