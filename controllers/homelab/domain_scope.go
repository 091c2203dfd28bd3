package homelab

import (
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// domainScope is one Domain reconcile's working state.
type domainScope struct {
	*reconcile.Session
	domain *homelabv1.Domain
	status *homelabv1.DomainStatus
}

// newDomainScope starts one reconcile of d, on a copy of its status.
func (r *DomainReconciler) newDomainScope(d *homelabv1.Domain) *domainScope {
	status := d.Status.DeepCopy()
	return &domainScope{
		Session: &reconcile.Session{Owner: d, Before: d.Status.Conditions, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		domain: d, status: status,
	}
}
