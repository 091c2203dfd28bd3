package homelab

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	homelabv1 "github.com/platform-operator/platform-operator/api/homelab/v1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// postgresConnectionScope is one reconcile of one PostgresConnection.
type postgresConnectionScope struct {
	*reconcile.Session
	conn *homelabv1.PostgresConnection
	// settings are the Secret's, once read.
	settings *postgres.Settings
	// address is host:port, for messages.
	address string
	version string
}

// newPostgresConnectionScope starts one reconcile of c, on a copy of its conditions.
func (r *PostgresConnectionReconciler) newPostgresConnectionScope(c *homelabv1.PostgresConnection) *postgresConnectionScope {
	conds := append([]metav1.Condition(nil), c.Status.Conditions...)
	return &postgresConnectionScope{
		Session: &reconcile.Session{Owner: c, Before: c.Status.Conditions, Conditions: &conds, Client: r.Client, Recorder: r.Recorder},
		conn:    c, version: c.Status.ServerVersion,
	}
}
