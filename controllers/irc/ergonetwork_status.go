package irc

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// partConditions are the per-part condition types in the order Ready reports them.
var partConditions = []string{
	ircv1.ConditionOperCredentials,
	ircv1.ConditionStorage,
	ircv1.ConditionCertificate,
	ircv1.ConditionConfig,
	ircv1.ConditionDeployment,
	ircv1.ConditionService,
	ircv1.ConditionRoute,
}

// scope carries one reconcile's working state from step to step.
type scope struct {
	net    *ircv1.ErgoNetwork
	status *ircv1.ErgoNetworkStatus

	// operHash is the bcrypt hash from the user's Secret; nil when the network has no oper.
	operHash []byte
	// operUsable is false when the network asks for an oper whose hash could not be read: config and
	// Deployment are then held as they are rather than rolled to a network without its oper.
	operUsable bool
	// rendered is the ircd.yaml the ConfigMap holds, once the config step ran.
	rendered []byte
	// refused is true when the API server refused a child; the reconcile is retried after
	// refusedRetry rather than with the fast error backoff.
	refused bool
	// created and updated name the children ("Kind name") this reconcile created or changed.
	created, updated []string
}

func newScope(n *ircv1.ErgoNetwork) *scope {
	return &scope{net: n, status: n.Status.DeepCopy(), operUsable: true}
}

// set records one part's condition.
func (s *scope) set(condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: s.net.Generation,
	})
}

// drop forgets a part the spec no longer asks for.
func (s *scope) drop(condType string) {
	meta.RemoveStatusCondition(&s.status.Conditions, condType)
}

// summarize fills the Ready condition and observedGeneration from what the steps found.
func (s *scope) summarize() *ircv1.ErgoNetworkStatus {
	s.status.ObservedGeneration = s.net.Generation
	s.status.NetworkName = s.net.Spec.EffectiveNetworkName()
	status, reason, message := readiness(s.status.Conditions)
	s.set(ircv1.ConditionReady, status, reason, message)
	return s.status
}

// readiness is Ready's value: True when every part present is True, otherwise False naming the parts
// that are not, the first one's reason as the reason.
func readiness(conds []metav1.Condition) (metav1.ConditionStatus, string, string) {
	var waiting []string
	reason := ""
	for _, t := range partConditions {
		c := meta.FindStatusCondition(conds, t)
		if c == nil || c.Status == metav1.ConditionTrue {
			continue
		}
		if reason == "" {
			reason = c.Reason
		}
		waiting = append(waiting, fmt.Sprintf("%s: %s", t, c.Message))
	}
	if len(waiting) == 0 {
		return metav1.ConditionTrue, ircv1.ReasonReady, "the network is running"
	}
	return metav1.ConditionFalse, reason, strings.Join(waiting, "; ")
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

// writeStatus sends the status only when it differs from what the network already shows, and not again
// when the network came from a cache that has not yet seen this operator's last write of the same status.
func (r *ErgoNetworkReconciler) writeStatus(ctx context.Context, n *ircv1.ErgoNetwork, status *ircv1.ErgoNetworkStatus) error {
	if equality.Semantic.DeepEqual(&n.Status, status) {
		return nil
	}
	key := client.ObjectKeyFromObject(n)
	w := statusWrite{uid: n.UID, before: statusDigest(&n.Status), after: statusDigest(status)}
	if r.memo.statusLagging(key, w) {
		return nil
	}
	orig := n.DeepCopy()
	n.Status = *status
	if err := r.Client.Status().Patch(ctx, n, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("write status: %w", err))
	}
	r.memo.rememberStatus(key, w)
	return nil
}

// statusDigest identifies a status, ignoring the conditions' lastTransitionTime: a reconcile working from
// a stale status recomputes the same transitions a second later.
func statusDigest(s *ircv1.ErgoNetworkStatus) uint64 {
	c := s.DeepCopy()
	for i := range c.Conditions {
		c.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	data, _ := json.Marshal(c) // a status always marshals
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}
