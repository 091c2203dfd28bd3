package irc

import (
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// ergoNetworkScope carries one reconcile of one ErgoNetwork from step to step.
type ergoNetworkScope struct {
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

// newErgoNetworkScope starts one reconcile of n: its status is a copy the steps fill in.
func (r *ErgoNetworkReconciler) newErgoNetworkScope(n *ircv1.ErgoNetwork) *ergoNetworkScope {
	status := n.Status.DeepCopy()
	return &ergoNetworkScope{
		Session: &reconcile.Session{Owner: n, Before: n.Status.Conditions, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		net: n, status: status, operUsable: true,
	}
}
