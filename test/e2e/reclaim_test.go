//go:build linux

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

// The claim holds ircd.db (accounts, channel registrations): what the garbage collector does to it when
// a network goes, and what a new network of the same name does with what is left.
var _ = Describe("ErgoNetwork", func() {
	key := func(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	bound := func(ctx SpecContext, ns, name string) *corev1.PersistentVolumeClaim {
		GinkgoHelper()
		pvc := &corev1.PersistentVolumeClaim{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, key(ns, name+"-data"), pvc)).To(Succeed())
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		}).WithTimeout(90 * time.Second).Should(Succeed())
		return pvc
	}
	// collected waits until the garbage collector has removed the deleted network's Deployment: proof
	// that it ran over the network's dependents.
	collected := func(ctx SpecContext, ns, name string) {
		GinkgoHelper()
		Eventually(ctx, func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, key(ns, name), &appsv1.Deployment{}))
		}).WithTimeout(2 * time.Minute).Should(BeTrue())
	}

	It("reclaim: with Retain the claim outlives the network and a new network of the same name runs on it", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		startOperator("reclaim-retain", operatorConfig{namespace: ns})
		n := ergotest.PlainNetwork(ns, "kept", "kept-oper")
		n.Spec.Storage.ReclaimPolicy = ircv1.ReclaimRetain
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "kept-oper", "pw"))).To(Succeed())
		Expect(k8s.Create(ctx, n)).To(Succeed())
		Eventually(ctx, converged(ctx, ns, "kept")).WithTimeout(90 * time.Second).Should(Succeed())
		pvc := bound(ctx, ns, "kept")
		Expect(pvc.OwnerReferences).To(BeEmpty())

		By("deleting the network with foreground propagation, the most thorough the garbage collector does")
		Expect(k8s.Delete(ctx, n, client.PropagationPolicy("Foreground"))).To(Succeed())
		collected(ctx, ns, "kept")
		Eventually(ctx, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key(ns, "kept"), &ircv1.ErgoNetwork{})) }).
			WithTimeout(time.Minute).Should(BeTrue())
		Consistently(ctx, func(g Gomega) {
			kept := &corev1.PersistentVolumeClaim{}
			g.Expect(k8s.Get(ctx, key(ns, "kept-data"), kept)).To(Succeed())
			g.Expect(kept.UID).To(Equal(pvc.UID))
			g.Expect(kept.DeletionTimestamp).To(BeNil())
			g.Expect(kept.Spec.VolumeName).To(Equal(pvc.Spec.VolumeName))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		By("a new network of the same name taking up the kept claim")
		again := ergotest.PlainNetwork(ns, "kept", "kept-oper")
		Expect(k8s.Create(ctx, again)).To(Succeed())
		Eventually(ctx, converged(ctx, ns, "kept")).WithTimeout(90 * time.Second).Should(Succeed())
		took := &corev1.PersistentVolumeClaim{}
		Expect(k8s.Get(ctx, key(ns, "kept-data"), took)).To(Succeed())
		Expect(took.UID).To(Equal(pvc.UID), "the kept claim, not a new empty one")
		Expect(took.Spec.VolumeName).To(Equal(pvc.Spec.VolumeName))
		dep := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, key(ns, "kept"), dep)).To(Succeed())
		Expect(dep.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", "kept-data")))
	})

	It("reclaim: with Delete a network re-created at once never gets, nor remakes, the old claim", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		startOperator("reclaim-delete", operatorConfig{namespace: ns})
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "again-oper", "pw"))).To(Succeed())
		Expect(k8s.Create(ctx, ergotest.PlainNetwork(ns, "again", "again-oper"))).To(Succeed())
		Eventually(ctx, converged(ctx, ns, "again")).WithTimeout(90 * time.Second).Should(Succeed())
		old := bound(ctx, ns, "again")

		By("deleting the network and creating one of the same name at once")
		n := &ircv1.ErgoNetwork{}
		Expect(k8s.Get(ctx, key(ns, "again"), n)).To(Succeed())
		Expect(k8s.Delete(ctx, n, client.PropagationPolicy("Background"))).To(Succeed())
		Eventually(ctx, func() bool { return apierrors.IsNotFound(k8s.Get(ctx, key(ns, "again"), &ircv1.ErgoNetwork{})) }).
			WithTimeout(time.Minute).Should(BeTrue())
		Expect(k8s.Create(ctx, ergotest.PlainNetwork(ns, "again", "again-oper"))).To(Succeed())

		By("the old claim going with the old network, and the new network making its own")
		Eventually(ctx, func(g Gomega) {
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(k8s.Get(ctx, key(ns, "again-data"), pvc)).To(Succeed())
			g.Expect(pvc.UID).NotTo(Equal(old.UID))
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
			g.Expect(pvc.Spec.VolumeName).NotTo(Equal(old.Spec.VolumeName), "the new claim is bound to the old volume")
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Eventually(ctx, converged(ctx, ns, "again")).WithTimeout(90 * time.Second).Should(Succeed())
		// The persistent-volume controller deletes a released volume of policy Delete on its own schedule,
		// after the old claim is gone: the new network may converge before it has.
		Eventually(ctx, func(g Gomega) {
			err := k8s.Get(ctx, types.NamespacedName{Name: old.Spec.VolumeName}, &corev1.PersistentVolume{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the old volume (reclaim policy Delete) must be gone: %v", err)
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})
