package ergo

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
)

// defaultStorageSize is the claim size when spec.storage.size is unset or zero. The CRD defaults it
// too; this covers objects that bypassed defaulting.
var defaultStorageSize = resource.MustParse("1Gi")

// PVC is the claim holding ergo's datastore and lock file. ReadWriteOnce is enough: the Deployment's
// Recreate strategy never runs two pods at once, and ergo must not share its datastore anyway.
//
// With reclaimPolicy Retain the claim has no owner reference, so nothing the garbage collector does
// (background or foreground deletion of the network) can take it: it outlives the network, labelled
// with its name, and a new network of that name finds it again. With Delete the network controls it.
func PVC(n *ircv1.ErgoNetwork) *corev1.PersistentVolumeClaim {
	size := defaultStorageSize.DeepCopy()
	if n.Spec.Storage.Size != nil && !n.Spec.Storage.Size.IsZero() {
		size = n.Spec.Storage.Size.DeepCopy()
	}
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: childMeta(n).Object(PVCName(n)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: size},
			},
		},
	}
	if n.Spec.Storage.ReclaimPolicy == ircv1.ReclaimRetain {
		pvc.OwnerReferences = nil
		pvc.Annotations = map[string]string{RetainedForAnnotation: string(n.UID)}
	}
	// Left out when empty so the cluster's default class is chosen and the field stays unowned.
	if n.Spec.Storage.StorageClassName != "" {
		class := n.Spec.Storage.StorageClassName
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}
