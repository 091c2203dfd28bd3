package irc

import (
	"strings"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"golang.org/x/crypto/bcrypt"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/reconcile"
)

// TestReadyOrder: Ready names the parts in the order the reconcile applies them, so its reason is the
// first part that holds the network back (the kit's Summary is tested in internal/reconcile).
func TestReadyOrder(t *testing.T) {
	n := &ircv1.ErgoNetwork{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	r := &ErgoNetworkReconciler{}
	s := r.newScope(n)
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

func TestDeploymentAvailable(t *testing.T) {
	available := []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	tests := []struct {
		name string
		d    appsv1.Deployment
		want bool
	}{
		{"fresh", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false},
		{"available", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1, AvailableReplicas: 1, Conditions: available}}, true},
		{"new spec not observed", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 3},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1, AvailableReplicas: 1, Conditions: available}}, false},
		{"old pod still serving", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 0, AvailableReplicas: 1, Conditions: available}}, false},
		{"available condition false", appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, msg := deploymentAvailable(&tt.d); got != tt.want || msg == "" {
				t.Errorf("got %v (%q), want %v with a message", got, msg, tt.want)
			}
		})
	}
}

func TestCertificateReady(t *testing.T) {
	withReady := func(s cmmeta.ConditionStatus, msg string) *cmv1.Certificate {
		return &cmv1.Certificate{Status: cmv1.CertificateStatus{Conditions: []cmv1.CertificateCondition{{Type: cmv1.CertificateConditionReady, Status: s, Message: msg}}}}
	}
	if ok, _ := certificateReady(&cmv1.Certificate{}); ok {
		t.Error("a certificate without status is ready")
	}
	if ok, msg := certificateReady(withReady(cmmeta.ConditionFalse, "issuer not found")); ok || !strings.Contains(msg, "issuer not found") {
		t.Errorf("got %v %q, want false carrying cert-manager's message", ok, msg)
	}
	if ok, _ := certificateReady(withReady(cmmeta.ConditionTrue, "")); !ok {
		t.Error("a Ready certificate is not ready")
	}
}

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
