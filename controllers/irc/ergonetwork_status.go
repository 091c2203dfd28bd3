package irc

import (
	"fmt"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/reconcile"
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
	ready := reconcile.Summary(s.status.Conditions, partConditions, ircv1.ReasonReady, "the network is running")
	s.Set(ircv1.ConditionReady, ready.Status, ready.Reason, ready.Message)
	return s.status
}

// deploymentAvailable says whether the Deployment runs its current spec with an available pod.
func deploymentAvailable(d *appsv1.Deployment) (bool, string) {
	if d.Status.ObservedGeneration < d.Generation {
		return false, "the Deployment controller has not seen the latest spec yet"
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.UpdatedReplicas < want {
		return false, fmt.Sprintf("%d of %d pods run the latest spec", d.Status.UpdatedReplicas, want)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			if c.Status == corev1.ConditionTrue && d.Status.AvailableReplicas >= want {
				return true, "the ergo pod is available"
			}
			return false, fmt.Sprintf("not available: %s", c.Message)
		}
	}
	return false, "waiting for the ergo pod to become available"
}

// certificateReady reads cert-manager's Ready condition.
func certificateReady(c *cmv1.Certificate) (bool, string) {
	for _, cond := range c.Status.Conditions {
		if cond.Type == cmv1.CertificateConditionReady {
			if cond.Status == cmmeta.ConditionTrue {
				return true, "the certificate is issued"
			}
			return false, fmt.Sprintf("cert-manager: %s", cond.Message)
		}
	}
	return false, "waiting for cert-manager to issue the certificate"
}
