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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

func TestReadiness(t *testing.T) {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	tests := []struct {
		name       string
		conds      []metav1.Condition
		status     metav1.ConditionStatus
		reason     string
		msgContain []string
	}{
		{"no parts yet", nil, metav1.ConditionTrue, ircv1.ReasonReady, nil},
		{"all parts true", []metav1.Condition{
			cond(ircv1.ConditionConfig, metav1.ConditionTrue, "Applied", ""),
			cond(ircv1.ConditionDeployment, metav1.ConditionTrue, "Ready", ""),
		}, metav1.ConditionTrue, ircv1.ReasonReady, nil},
		{"first waiting part gives the reason, all are named", []metav1.Condition{
			cond(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonDeploymentPending, "no pod"),
			cond(ircv1.ConditionCertificate, metav1.ConditionFalse, ircv1.ReasonCertificatePending, "not issued"),
		}, metav1.ConditionFalse, ircv1.ReasonCertificatePending, []string{"CertificateReady: not issued", "DeploymentAvailable: no pod"}},
		{"unknown counts as not ready", []metav1.Condition{
			cond(ircv1.ConditionService, metav1.ConditionUnknown, ircv1.ReasonApplyFailed, "timeout"),
		}, metav1.ConditionFalse, ircv1.ReasonApplyFailed, []string{"ServiceReady: timeout"}},
		{"an old Ready condition is ignored", []metav1.Condition{
			cond(ircv1.ConditionReady, metav1.ConditionFalse, "Old", "old"),
		}, metav1.ConditionTrue, ircv1.ReasonReady, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, reason, msg := readiness(tt.conds)
			if status != tt.status || reason != tt.reason {
				t.Errorf("got %s/%s, want %s/%s", status, reason, tt.status, tt.reason)
			}
			for _, m := range tt.msgContain {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q lacks %q", msg, m)
				}
			}
		})
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

func TestStatusMemo(t *testing.T) {
	cond := func(status metav1.ConditionStatus, at int64) ircv1.ErgoNetworkStatus {
		return ircv1.ErgoNetworkStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
			Type: ircv1.ConditionReady, Status: status, Reason: "R", LastTransitionTime: metav1.Unix(at, 0)}}}
	}
	empty, ready, readyLater, notReady := ircv1.ErgoNetworkStatus{}, cond(metav1.ConditionTrue, 10), cond(metav1.ConditionTrue, 11), cond(metav1.ConditionFalse, 10)
	key := types.NamespacedName{Namespace: "ns", Name: "n"}
	write := func(uid types.UID, from, to *ircv1.ErgoNetworkStatus) statusWrite {
		return statusWrite{uid: uid, before: statusDigest(from), after: statusDigest(to)}
	}

	var m memo
	if m.statusLagging(key, write("u1", &empty, &ready)) {
		t.Fatal("an empty memo must not hold a write back")
	}
	m.rememberStatus(key, write("u1", &empty, &ready))
	tests := []struct {
		name string
		w    statusWrite
		want bool
	}{
		{"the cache still shows the replaced status, the same status is wanted", write("u1", &empty, &ready), true},
		{"only lastTransitionTime differs (recomputed a second later)", write("u1", &empty, &readyLater), true},
		{"a different status is wanted", write("u1", &empty, &notReady), false},
		{"the cache shows someone else's status", write("u1", &notReady, &ready), false},
		{"a recreated network with the same name", write("u2", &empty, &ready), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.statusLagging(key, tt.w); got != tt.want {
				t.Errorf("lagging = %v, want %v", got, tt.want)
			}
		})
	}
	m.forget(key)
	if m.statusLagging(key, write("u1", &empty, &ready)) {
		t.Error("a forgotten network must not hold a write back")
	}
}
