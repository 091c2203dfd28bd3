package ergo

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/labels"
)

func TestPVC(t *testing.T) {
	tests := []struct {
		name      string
		storage   ircv1.StorageSpec
		wantSize  string
		wantClass *string
	}{
		{name: "defaults", storage: ircv1.StorageSpec{}, wantSize: "1Gi"},
		{name: "zero size", storage: ircv1.StorageSpec{Size: ptr.To(resource.MustParse("0"))}, wantSize: "1Gi"},
		{name: "size", storage: ircv1.StorageSpec{Size: ptr.To(resource.MustParse("5Gi"))}, wantSize: "5Gi"},
		{
			name:      "storage class",
			storage:   ircv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi")), StorageClassName: "customer-workload-storage"},
			wantSize:  "1Gi",
			wantClass: ptr.To("customer-workload-storage"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := referenceNetwork()
			n.Spec.Storage = tt.storage
			pvc := PVC(n)
			if pvc.Name != "my-network-data" {
				t.Errorf("name = %q", pvc.Name)
			}
			if len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce {
				t.Errorf("accessModes = %v, want [ReadWriteOnce]", pvc.Spec.AccessModes)
			}
			got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if want := resource.MustParse(tt.wantSize); got.Cmp(want) != 0 {
				t.Errorf("storage request = %s, want %s", got.String(), tt.wantSize)
			}
			if len(pvc.Spec.Resources.Requests) != 1 || pvc.Spec.Resources.Limits != nil {
				t.Errorf("resources = %+v, want only a storage request", pvc.Spec.Resources)
			}
			if (pvc.Spec.StorageClassName == nil) != (tt.wantClass == nil) ||
				(tt.wantClass != nil && *pvc.Spec.StorageClassName != *tt.wantClass) {
				t.Errorf("storageClassName = %v, want %v", pvc.Spec.StorageClassName, tt.wantClass)
			}
		})
	}
}

func TestPVCReclaimPolicy(t *testing.T) {
	tests := []struct {
		policy ircv1.ReclaimPolicy
		owned  bool
	}{
		{"", true}, // objects that bypassed defaulting: Delete
		{ircv1.ReclaimDelete, true},
		{ircv1.ReclaimRetain, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			n := referenceNetwork()
			n.Spec.Storage.ReclaimPolicy = tt.policy
			p := PVC(n)
			if owned := len(p.OwnerReferences) == 1 && *p.OwnerReferences[0].Controller; owned != tt.owned {
				t.Errorf("owner references %+v, want owned=%v", p.OwnerReferences, tt.owned)
			}
			if p.Labels[labels.InstanceLabel] != n.Name || !labels.IsManaged(p.Labels) {
				t.Errorf("labels %v must name the network and the operator whatever the policy", p.Labels)
			}
		})
	}
}
