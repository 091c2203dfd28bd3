package irc

import (
	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/soju"
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

// sojuRestoreParts are the part conditions of a bouncer with spec.restore: Restored comes after the
// database it fills and before everything that uses it.
var sojuRestoreParts = append(append(append([]string(nil), sojuParts[:2]...), backupv1.ConditionRestored), sojuParts[2:]...)

// summarize fills Ready, observedGeneration and the database's names from what the steps found.
func (s *sojuBouncerScope) summarize() *ircv1.SojuBouncerStatus {
	s.status.ObservedGeneration = s.b.Generation
	s.status.DatabaseName = soju.DatabaseName(s.b)
	parts := sojuParts
	if s.b.Spec.Restore != nil {
		parts = sojuRestoreParts
	}
	s.Summarize(parts, ircv1.ReasonReady, "the bouncer is running")
	return s.status
}
