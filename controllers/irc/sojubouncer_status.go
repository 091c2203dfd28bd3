package irc

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/postgres"
)

// sojuParts are a SojuBouncer's part conditions in the order Ready reports them. Cleanup, present only
// while a deleted bouncer waits, comes first: it is what the user must act on then.
var sojuParts = []string{
	ircv1.ConditionCleanup,
	ircv1.ConditionDatabase,
	ircv1.ConditionAdminUser,
	ircv1.ConditionCertificate,
	ircv1.ConditionConfig,
	ircv1.ConditionDeployment,
	ircv1.ConditionService,
	ircv1.ConditionRoute,
}

// sojuScope carries one reconcile of one SojuBouncer from step to step.
type sojuScope struct {
	*reconcile.Session
	b      *ircv1.SojuBouncer
	status *ircv1.SojuBouncerStatus
	before []metav1.Condition

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

func (r *SojuBouncerReconciler) newScope(b *ircv1.SojuBouncer) *sojuScope {
	status := b.Status.DeepCopy()
	return &sojuScope{
		Session: &reconcile.Session{Owner: b, Conditions: &status.Conditions, Client: r.Client,
			Applier: r.applier, Recorder: r.Recorder},
		b: b, status: status, before: b.Status.Conditions, adminUsable: true,
	}
}

// sojuRestoreParts are the part conditions of a bouncer with spec.restore: Restored comes after the
// database it fills and before everything that uses it.
var sojuRestoreParts = append(append(append([]string(nil), sojuParts[:2]...), backupv1.ConditionRestored), sojuParts[2:]...)

// summarize fills Ready, observedGeneration and the database's names from what the steps found.
func (s *sojuScope) summarize() *ircv1.SojuBouncerStatus {
	s.status.ObservedGeneration = s.b.Generation
	s.status.DatabaseName = soju.DatabaseName(s.b)
	parts := sojuParts
	if s.b.Spec.Restore != nil {
		parts = sojuRestoreParts
	}
	s.Summarize(parts, ircv1.ReasonReady, "the bouncer is running")
	return s.status
}
