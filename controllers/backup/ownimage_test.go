package backup

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/kit/ownimage"
)

var _ = Describe("The operator's own image", func() {
	It("is read from the manager container of the operator's own pod, with the operator's permissions", func(ctx SpecContext) {
		ns := newNamespace("operator")
		pod := func(name, image string) {
			Expect(k8s.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar", Image: "registry.test/other:v1"},
					{Name: ownimage.ManagerContainer, Image: image}}}})).To(Succeed())
		}
		pod("platform-operator-abc", "registry.test/platform-operator@sha256:0123")
		pod("platform-operator-def", "registry.test/platform-operator:old")
		// As the operator: the ClusterRole's pods list is all it has.
		asOperator, err := client.New(managerConfig, client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		own := &ownimage.Resolver{Reader: asOperator, Namespace: ns, Name: "platform-operator-abc"}
		Expect(own.Get(ctx)).To(Equal("registry.test/platform-operator@sha256:0123"))
		// Hostile: a pod name that is not there, or none at all, gives nothing (the Backup waits).
		Expect((&ownimage.Resolver{Reader: asOperator, Namespace: ns, Name: "platform-operator-gone"}).Get(ctx)).To(BeEmpty())
		Expect((&ownimage.Resolver{Reader: asOperator, Namespace: ns}).Get(ctx)).To(BeEmpty())
	})
})
