package irc

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

// envtest runs no garbage collector: what a deleted network's owner references would take stays, which
// is exactly the moment a new network of the same name must not take it over (test/e2e covers the
// collector itself).
var _ = Describe("the claim's reclaim policy", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace()
	})
	claim := func(name string) *corev1.PersistentVolumeClaim {
		GinkgoHelper()
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(get(ctx, pvc, ns, name)()).To(Succeed())
		return pvc
	}

	It("keeps a Retain claim free of owner references, and follows a policy change both ways", func() {
		n := ergotest.MinimalNetwork(ns, "keep")
		n.Spec.Storage.ReclaimPolicy = ircv1.ReclaimRetain
		Expect(k8s.Create(ctx, n)).To(Succeed())
		Eventually(get(ctx, &appsv1.Deployment{}, ns, "keep")).Should(Succeed())
		pvc := claim("keep-data")
		Expect(pvc.OwnerReferences).To(BeEmpty())
		Expect(pvc.Annotations).To(HaveKeyWithValue(ergo.RetainedForAnnotation, string(n.UID)))
		Expect(pvc.Labels).To(HaveKeyWithValue("app.kubernetes.io/instance", "keep"))
		got := eventuallyNetwork(ctx, ns, "keep", haveCondition(ircv1.ConditionStorage, metav1.ConditionFalse, ircv1.ReasonClaimPending))
		Expect(condition(got, ircv1.ConditionStorage).Message).To(ContainSubstring("reclaimPolicy Retain"))
		Expect(ergotest.MarkClaimBound(ctx, k8s, ns, "keep-data")).To(Succeed())
		eventuallyNetwork(ctx, ns, "keep", haveCondition(ircv1.ConditionStorage, metav1.ConditionTrue, ircv1.ReasonApplied))

		update(ctx, ns, "keep", func(n *ircv1.ErgoNetwork) { n.Spec.Storage.ReclaimPolicy = ircv1.ReclaimDelete })
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, pvc, ns, "keep-data")()).To(Succeed())
			g.Expect(metav1.IsControlledBy(pvc, n)).To(BeTrue())
			g.Expect(pvc.Annotations).NotTo(HaveKey(ergo.RetainedForAnnotation))
		}).Should(Succeed())
		update(ctx, ns, "keep", func(n *ircv1.ErgoNetwork) { n.Spec.Storage.ReclaimPolicy = ircv1.ReclaimRetain })
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, pvc, ns, "keep-data")()).To(Succeed())
			g.Expect(pvc.OwnerReferences).To(BeEmpty())
		}).Should(Succeed())
		Expect(pvc.UID).To(Equal(claim("keep-data").UID))
	})

	It("takes up the claim an earlier network of the same name kept", func() {
		first := ergotest.MinimalNetwork(ns, "again")
		first.Spec.Storage.ReclaimPolicy = ircv1.ReclaimRetain
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(get(ctx, &corev1.PersistentVolumeClaim{}, ns, "again-data")).Should(Succeed())
		kept := claim("again-data")
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(get(ctx, &ircv1.ErgoNetwork{}, ns, "again")).ShouldNot(Succeed())

		second := ergotest.MinimalNetwork(ns, "again") // Delete: the new network takes the claim over for good
		Expect(k8s.Create(ctx, second)).To(Succeed())
		// The kept claim is still bound to its volume: the new network is not waiting on a new one.
		Expect(ergotest.MarkClaimBound(ctx, k8s, ns, "again-data")).To(Succeed())
		eventuallyNetwork(ctx, ns, "again", haveCondition(ircv1.ConditionStorage, metav1.ConditionTrue, ircv1.ReasonApplied))
		Eventually(func(g Gomega) {
			pvc := claim("again-data")
			g.Expect(pvc.UID).To(Equal(kept.UID), "the kept claim, not a new empty one")
			g.Expect(metav1.IsControlledBy(pvc, second)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func() []string {
			var list corev1.EventList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				if e.InvolvedObject.UID == second.UID {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).Should(ContainElement(ircv1.ReasonClaimAdopted))
	})

	It("never takes over or remakes a claim an earlier network still controls", func() {
		first := ergotest.MinimalNetwork(ns, "gone")
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(get(ctx, &corev1.PersistentVolumeClaim{}, ns, "gone-data")).Should(Succeed())
		old := claim("gone-data")
		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(get(ctx, &ircv1.ErgoNetwork{}, ns, "gone")).ShouldNot(Succeed())

		Expect(k8s.Create(ctx, ergotest.MinimalNetwork(ns, "gone"))).To(Succeed())
		got := eventuallyNetwork(ctx, ns, "gone", haveCondition(ircv1.ConditionStorage, metav1.ConditionFalse, ircv1.ReasonNameConflict))
		Expect(condition(got, ircv1.ConditionStorage).Message).To(ContainSubstring("belongs to an earlier ErgoNetwork gone"))
		Consistently(func(g Gomega) {
			pvc := claim("gone-data")
			g.Expect(pvc.UID).To(Equal(old.UID))
			g.Expect(pvc.ResourceVersion).To(Equal(old.ResourceVersion))
		}).Should(Succeed())

		By("the garbage collector's work done, the network makes its own claim")
		Expect(k8s.Delete(ctx, old)).To(Succeed())
		// No kube-controller-manager here to release the claim's pvc-protection finalizer.
		Expect(k8s.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "gone"}})
			g.Expect(err).NotTo(HaveOccurred())
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(get(ctx, pvc, ns, "gone-data")()).To(Succeed())
			g.Expect(pvc.UID).NotTo(Equal(old.UID))
		}).Should(Succeed())
	})
})
