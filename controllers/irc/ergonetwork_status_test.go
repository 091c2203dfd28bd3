package irc

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backupv1 "github.com/platform-operator/platform-operator/api/backup/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// TestReadyOrder: Ready names the parts in the order the reconcile applies them, so its reason is the
// first part that holds the network back (the kit's Summary is tested in internal/kit/reconcile).
func TestReadyOrder(t *testing.T) {
	n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	r := &ErgoNetworkReconciler{}
	s := r.newErgoNetworkScope(n)
	s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonDeploymentPending, "no pod")
	s.Set(ircv1.ConditionCertificate, metav1.ConditionFalse, ircv1.ReasonCertificatePending, "not issued")
	st := s.summarize()
	var ready *metav1.Condition
	for i := range st.Conditions {
		if st.Conditions[i].Type == ircv1.ConditionReady {
			ready = &st.Conditions[i]
		}
	}
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ircv1.ReasonCertificatePending ||
		ready.Message != "CertificateReady: not issued; DeploymentAvailable: no pod" || ready.ObservedGeneration != 3 {
		t.Errorf("Ready = %+v", ready)
	}
	if st.ObservedGeneration != 3 {
		t.Errorf("observedGeneration = %d, want 3", st.ObservedGeneration)
	}
	if n.Status.Conditions != nil {
		t.Error("summarize changed the network it was given")
	}
}

// TestKitReasons: the kit sets ApplyFailed and APINotAvailable; the API documents them as its own.
func TestKitReasons(t *testing.T) {
	if reconcile.ReasonApplyFailed != ircv1.ReasonApplyFailed || reconcile.ReasonAPINotAvailable != ircv1.ReasonAPINotAvailable ||
		reconcile.ReasonNameConflict != ircv1.ReasonNameConflict ||
		reconcile.ConditionReady != ircv1.ConditionReady {
		t.Error("the kit's reasons and the irc API's differ")
	}
}

// TestDeploymentAvailable and TestCertificateReady moved to internal/kit/reconcile (readiness_test.go), with
// the kit's DeploymentReady (kstatus) and CertificateReady that replaced ergo's own checks.

func TestCheckBcryptHash(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		value []byte
		ok    bool
	}{
		{"bcrypt hash", hash, true},
		{"trailing newline", append(append([]byte{}, hash...), '\n'), false},
		{"plain password", []byte("hunter2"), false},
		{"empty", nil, false},
		{"truncated hash", hash[:30], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := checkBcryptHash(tt.value)
			if (msg == "") != tt.ok {
				t.Errorf("checkBcryptHash = %q, want ok=%v", msg, tt.ok)
			}
			if len(tt.value) > 0 && strings.Contains(msg, string(tt.value)) {
				t.Error("the message quotes the secret value")
			}
		})
	}
}

// TestReadyOrderWithRestore: a network made with spec.restore reports Restored before the Deployment,
// which waits for it; one without has no Restored part.
func TestReadyOrderWithRestore(t *testing.T) {
	n := &ircv1.ErgoNetwork{}
	if slices.Contains(readyOrder(n), backupv1.ConditionRestored) {
		t.Errorf("order %v names Restored for a network without spec.restore", readyOrder(n))
	}
	n.Spec.Restore = &ircv1.RestoreSource{Backup: "nightly"}
	order := readyOrder(n)
	i, j := slices.Index(order, backupv1.ConditionRestored), slices.Index(order, ircv1.ConditionDeployment)
	if i < 0 || j != i+1 || len(order) != len(partConditions)+1 {
		t.Errorf("order %v, want Restored just before DeploymentAvailable", order)
	}
	s := (&ErgoNetworkReconciler{}).newErgoNetworkScope(n)
	s.Set(backupv1.ConditionRestored, metav1.ConditionFalse, backupv1.ReasonRestoring, "Job x is restoring")
	s.Set(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonWaiting, "held")
	st := s.summarize()
	for _, c := range st.Conditions {
		if c.Type == ircv1.ConditionReady && c.Reason != backupv1.ReasonRestoring {
			t.Errorf("Ready = %+v, want reason Restoring", c)
		}
	}
}
