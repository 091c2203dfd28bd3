package homelab

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// domainScope is one Domain reconcile's working state.
type domainScope struct {
	*reconcile.Session
	domain *homelabv1.Domain
	status *homelabv1.DomainStatus
	// before are the conditions as the reconcile read them: a Warning goes out only when they did not
	// say it already.
	before []metav1.Condition
}

// newDomainScope starts one reconcile of d, on a copy of its status.
func (r *DomainReconciler) newDomainScope(d *homelabv1.Domain) *domainScope {
	status := d.Status.DeepCopy()
	return &domainScope{
		Session: &reconcile.Session{Owner: d, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		domain: d, status: status, before: d.Status.Conditions,
	}
}
