package reconcile

import (
	"strings"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// deployment is a Deployment as the API server returns it (progressDeadlineSeconds defaulted), with
// replicas wanted and the given status.
func deployment(generation int64, replicas int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: generation},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas), ProgressDeadlineSeconds: ptr.To[int32](600)},
		Status:     st,
	}
}

// rolledOut is the status the Deployment controller writes once n pods of generation gen are available
// and the rollout is complete.
func rolledOut(gen int64, n int32) appsv1.DeploymentStatus {
	return appsv1.DeploymentStatus{ObservedGeneration: gen, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
}

// TestDeploymentReady covers the states the hand-written checks it replaces covered (ergo's, soju's and
// authentik's deploymentAvailable: the same verdicts) and the ones kstatus adds.
func TestDeploymentReady(t *testing.T) {
	with := func(st appsv1.DeploymentStatus, f func(*appsv1.DeploymentStatus)) appsv1.DeploymentStatus {
		f(&st)
		return st
	}
	available := []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}
	tests := []struct {
		name          string
		d             *appsv1.Deployment
		ready, failed bool
		message       string
	}{
		// The old checks' table (controllers/irc ergonetwork_status_test.go, sojubouncer_status_test.go).
		{"fresh", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false, false, "Replicas: 0/1"},
		{"available", deployment(2, 1, rolledOut(2, 1)), true, false, "Deployment is available. Replicas: 1"},
		{"new spec not observed", deployment(3, 1, rolledOut(2, 1)), false, false, "latest observed generation is 2"},
		{"old pod still serving", deployment(2, 1, with(rolledOut(2, 1), func(s *appsv1.DeploymentStatus) { s.UpdatedReplicas = 0 })),
			false, false, "Updated: 0/1"},
		{"not rolled", deployment(2, 1, appsv1.DeploymentStatus{ObservedGeneration: 2, AvailableReplicas: 1, Conditions: available}),
			false, false, "Replicas: 0/1"},
		{"available condition false", deployment(2, 1, with(rolledOut(2, 1), func(s *appsv1.DeploymentStatus) {
			s.AvailableReplicas, s.ReadyReplicas = 0, 0
			s.Conditions[0].Status = corev1.ConditionFalse
		})), false, false, "Available: 0/1"},
		// What kstatus reads beyond them.
		{"the rollout is not complete yet", deployment(2, 1, with(rolledOut(2, 1), func(s *appsv1.DeploymentStatus) {
			s.Conditions[1].Reason = "ReplicaSetUpdated"
		})), false, false, "ReplicaSet not Available"},
		{"a pod of the old spec is still terminating", deployment(2, 1, with(rolledOut(2, 1), func(s *appsv1.DeploymentStatus) { s.Replicas = 2 })),
			false, false, "Pending termination: 1"},
		{"two of three ready", deployment(2, 3, with(rolledOut(2, 3), func(s *appsv1.DeploymentStatus) { s.ReadyReplicas, s.AvailableReplicas = 2, 2 })),
			false, false, "Available: 2/3"},
		{"past its progress deadline", deployment(2, 1, with(rolledOut(2, 1), func(s *appsv1.DeploymentStatus) {
			s.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet d-1 has timed out progressing"}
		})), false, true, "Progress deadline exceeded"},
		{"being deleted", func() *appsv1.Deployment {
			d := deployment(2, 1, rolledOut(2, 1))
			d.DeletionTimestamp = ptr.To(metav1.Now())
			return d
		}(), false, false, "scheduled for deletion"},
		{"scaled to zero", deployment(2, 0, with(rolledOut(2, 0), func(s *appsv1.DeploymentStatus) {})), true, false, "Replicas: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DeploymentReady(tt.d)
			if got.Ready != tt.ready || got.Failed != tt.failed || !strings.Contains(got.Message, tt.message) {
				t.Errorf("DeploymentReady = %+v, want ready=%v failed=%v with %q", got, tt.ready, tt.failed, tt.message)
			}
		})
	}
}

func TestStatefulSetReady(t *testing.T) {
	sts := func(gen int64, replicas int32, st appsv1.StatefulSetStatus) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Generation: gen},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}, Status: st}
	}
	current := func(gen int64, n int32) appsv1.StatefulSetStatus {
		return appsv1.StatefulSetStatus{ObservedGeneration: gen, Replicas: n, ReadyReplicas: n, CurrentReplicas: n, UpdatedReplicas: n,
			AvailableReplicas: n, CurrentRevision: "s-1", UpdateRevision: "s-1"}
	}
	tests := []struct {
		name  string
		s     *appsv1.StatefulSet
		ready bool
	}{
		{"fresh", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 1}}, false},
		{"every replica ready on the current revision", sts(2, 2, current(2, 2)), true},
		{"new spec not observed", sts(3, 2, current(2, 2)), false},
		{"one replica not ready", sts(2, 2, func() appsv1.StatefulSetStatus { s := current(2, 2); s.ReadyReplicas = 1; return s }()), false},
		{"an update rolling", sts(2, 2, func() appsv1.StatefulSetStatus {
			s := current(2, 2)
			s.UpdateRevision, s.UpdatedReplicas = "s-2", 1
			return s
		}()), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StatefulSetReady(tt.s); got.Ready != tt.ready || got.Message == "" {
				t.Errorf("StatefulSetReady = %+v, want ready=%v with a message", got, tt.ready)
			}
		})
	}
}

func TestCertificateReady(t *testing.T) {
	withReady := func(s cmmeta.ConditionStatus, msg string) *cmv1.Certificate {
		return &cmv1.Certificate{Status: cmv1.CertificateStatus{Conditions: []cmv1.CertificateCondition{
			{Type: cmv1.CertificateConditionIssuing, Status: cmmeta.ConditionTrue, Message: "issuing"},
			{Type: cmv1.CertificateConditionReady, Status: s, Message: msg}}}}
	}
	tests := []struct {
		name    string
		c       *cmv1.Certificate
		ready   bool
		message string
	}{
		{"no status", &cmv1.Certificate{}, false, "waiting for cert-manager to issue the certificate"},
		{"nil", nil, false, "waiting for cert-manager to issue the certificate"},
		{"refused, with cert-manager's message", withReady(cmmeta.ConditionFalse, "issuer not found"), false, "cert-manager: issuer not found"},
		{"unknown", withReady(cmmeta.ConditionUnknown, "pending"), false, "cert-manager: pending"},
		{"issued", withReady(cmmeta.ConditionTrue, "Certificate is up to date and has not expired"), true, "the certificate is issued"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CertificateReady(tt.c); got.Ready != tt.ready || got.Failed || got.Message != tt.message {
				t.Errorf("CertificateReady = %+v, want ready=%v %q", got, tt.ready, tt.message)
			}
		})
	}
}
