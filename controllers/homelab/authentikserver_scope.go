package homelab

import (
	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// authentikServerScope is one AuthentikServer reconcile's working state.
type authentikServerScope struct {
	*reconcile.Session
	server *homelabv1.AuthentikServer
	status *homelabv1.AuthentikServerStatus
	// What the dependencies give, once Ready.
	hostname, gateway, databaseSecret, redisSecret string
	// waiting is false once every dependency is Ready.
	waiting bool
	// secretReady is true once the generated Secret holds every key.
	secretReady bool
}

// newAuthentikServerScope starts one reconcile of a, on a copy of its status.
func (r *AuthentikServerReconciler) newAuthentikServerScope(a *homelabv1.AuthentikServer) *authentikServerScope {
	status := a.Status.DeepCopy()
	return &authentikServerScope{
		Session: &reconcile.Session{Owner: a, Before: a.Status.Conditions, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		server: a, status: status,
	}
}
