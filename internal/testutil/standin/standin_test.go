package standin_test

import (
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
	"github.com/platform-operator/platform-operator/internal/testutil/standin"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, cmv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&appsv1.Deployment{}, &cmv1.Certificate{}, &corev1.PersistentVolumeClaim{}).Build()
}

// TestMarkDeploymentAvailable checks that the stand-in rolls out every replica the spec asks for, as the
// readers of the controllers (kstatus through reconcile.DeploymentReady) see it: before it runs, the same
// Deployment is not Ready, so the check can fail.
func TestMarkDeploymentAvailable(t *testing.T) {
	tests := []struct {
		name     string
		replicas *int32
		want     int32
	}{
		{"replicas unset, as the API server defaults it", nil, 1},
		{"one replica", ptr.To[int32](1), 1},
		{"three replicas", ptr.To[int32](3), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2},
				Spec: appsv1.DeploymentSpec{Replicas: tt.replicas}}
			c := fakeClient(t, d)
			got := &appsv1.Deployment{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), got); err != nil {
				t.Fatal(err)
			}
			if r := reconcile.DeploymentReady(got); r.Ready {
				t.Fatalf("Ready before the stand-in ran: %+v", r)
			}
			if err := standin.MarkDeploymentAvailable(t.Context(), c, "ns", "web"); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), got); err != nil {
				t.Fatal(err)
			}
			if s := got.Status; s.Replicas != tt.want || s.UpdatedReplicas != tt.want || s.ReadyReplicas != tt.want || s.AvailableReplicas != tt.want {
				t.Errorf("status replicas %d/%d/%d/%d, want %d each", s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, tt.want)
			}
			if got.Status.ObservedGeneration != got.Generation {
				t.Errorf("observedGeneration %d, want %d", got.Status.ObservedGeneration, got.Generation)
			}
			if r := reconcile.DeploymentReady(got); !r.Ready {
				t.Errorf("not Ready after the stand-in: %+v", r)
			}
		})
	}
	if err := standin.MarkDeploymentAvailable(t.Context(), fakeClient(t), "ns", "missing"); err == nil {
		t.Error("marking a missing Deployment succeeded")
	}
}

// TestMarkCertificateReady checks the stand-in for cert-manager against the readiness reader the
// controllers use, with the unmarked Certificate as the control.
func TestMarkCertificateReady(t *testing.T) {
	cert := &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tls", Generation: 3}}
	c := fakeClient(t, cert)
	got := &cmv1.Certificate{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cert), got); err != nil {
		t.Fatal(err)
	}
	if r := reconcile.CertificateReady(got); r.Ready {
		t.Fatalf("Ready before the stand-in ran: %+v", r)
	}
	if err := standin.MarkCertificateReady(t.Context(), c, "ns", "tls"); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cert), got); err != nil {
		t.Fatal(err)
	}
	if r := reconcile.CertificateReady(got); !r.Ready {
		t.Errorf("not Ready after the stand-in: %+v", r)
	}
}

// TestMarkClaimBound checks that the claim is bound with its requested size, or left in the phase asked for.
func TestMarkClaimBound(t *testing.T) {
	tests := []struct {
		name  string
		phase []corev1.PersistentVolumeClaimPhase
		want  corev1.PersistentVolumeClaimPhase
	}{
		{"bound", nil, corev1.ClaimBound},
		{"lost", []corev1.PersistentVolumeClaimPhase{corev1.ClaimLost}, corev1.ClaimLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := resource.MustParse("5Gi")
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
			c := fakeClient(t, pvc)
			if err := standin.MarkClaimBound(t.Context(), c, "ns", "data", tt.phase...); err != nil {
				t.Fatal(err)
			}
			got := &corev1.PersistentVolumeClaim{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(pvc), got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != tt.want {
				t.Errorf("phase %s, want %s", got.Status.Phase, tt.want)
			}
			if q := got.Status.Capacity[corev1.ResourceStorage]; q.Cmp(size) != 0 {
				t.Errorf("capacity %s, want %s", q.String(), size.String())
			}
		})
	}
}
