package iot

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// deviceCredentialScope carries one reconcile of a DeviceCredential from step to step.
type deviceCredentialScope struct {
	*reconcile.Session
	dc     *iotv1.DeviceCredential
	status *iotv1.DeviceCredentialStatus
	now    time.Time

	// issued is true once the credentials are known to be in their Secret (status.userKey then names
	// them).
	issued  bool
	requeue ctrl.Result
}

// newDeviceCredentialScope starts one reconcile of dc, on a copy of its status.
func (r *DeviceCredentialReconciler) newDeviceCredentialScope(dc *iotv1.DeviceCredential) *deviceCredentialScope {
	status := dc.Status.DeepCopy()
	return &deviceCredentialScope{
		Session: &reconcile.Session{Owner: dc, Before: dc.Status.Conditions, Conditions: &status.Conditions, Client: r.Client, Recorder: r.Recorder},
		dc:      dc, status: status, now: r.clock(),
	}
}

// after asks for a reconcile after d at the latest.
func (s *deviceCredentialScope) after(d time.Duration) {
	s.requeue = reconcile.Soonest(s.requeue, ctrl.Result{RequeueAfter: d})
}
