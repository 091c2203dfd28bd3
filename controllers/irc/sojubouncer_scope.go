package irc

import (
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// sojuBouncerScope carries one reconcile of one SojuBouncer from step to step.
type sojuBouncerScope struct {
	*reconcile.Session
	b      *ircv1.SojuBouncer
	status *ircv1.SojuBouncerStatus

	// login is the role's login, password included, once the database step made sure it works.
	login *postgres.Settings
	// transport is what the database step's admin session ran over: it decides the sslmode soju gets
	// for an admin connection's prefer or allow.
	transport postgres.Transport
	// adminPassword is the first admin user's password; adminUsable is false when the spec asks for an
	// admin user whose password could not be read, which holds the Deployment as it is.
	adminPassword string
	adminUsable   bool
	// rendered is the config the ConfigMap holds, once the config step ran.
	rendered []byte
}

// newSojuBouncerScope starts one reconcile of b: its status is a copy the steps fill in.
func (r *SojuBouncerReconciler) newSojuBouncerScope(b *ircv1.SojuBouncer) *sojuBouncerScope {
	status := b.Status.DeepCopy()
	return &sojuBouncerScope{
		Session: &reconcile.Session{Owner: b, Before: b.Status.Conditions, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		b: b, status: status, adminUsable: true,
	}
}
