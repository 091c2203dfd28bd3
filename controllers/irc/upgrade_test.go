package irc

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// What an earlier operator version left behind must keep running untouched: its annotations move to the one
// annotation domain only with the next real change, so an upgrade alone writes nothing.
var _ = Describe("a network an earlier version made", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace()
	})

	It("keeps both digests under their old keys until a real change rolls the pod anyway", func() {
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "old-oper", "pw"))).To(Succeed())
		Expect(k8s.Create(ctx, ergotest.PlainNetwork(ns, "old", "old-oper"))).To(Succeed())
		Eventually(get(ctx, &appsv1.Deployment{}, ns, "old")).Should(Succeed())
		// The network converged and the operator idle: what follows is an upgrade, where the earlier
		// version's objects are there before this version reconciles them.
		reconcileUntilQuiet(ctx, ns, "old")
		Eventually(managerIdle).Should(BeTrue())
		digest := templateDigest(ctx, ns, "old")
		n := &ircv1.ErgoNetwork{}
		Expect(get(ctx, n, ns, "old")()).To(Succeed())

		By("applying the Deployment the earlier version applied, under the same field owner")
		old, err := apply.ToUnstructured(ergo.Deployment(n, ergo.Options{Image: reconciler.Image, LegacyDigestKey: true}, digest))
		Expect(err).NotTo(HaveOccurred())
		annotations := old.GetAnnotations()
		annotations[apply.LegacyDigestAnnotation] = annotations[apply.DigestAnnotation]
		delete(annotations, apply.DigestAnnotation)
		old.SetAnnotations(annotations)
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(old),
			client.FieldOwner(oplabels.FieldOwner), client.ForceOwnership)).To(Succeed())
		legacy := &appsv1.Deployment{}
		Expect(get(ctx, legacy, ns, "old")()).To(Succeed())
		Expect(legacy.Spec.Template.Annotations).To(Equal(map[string]string{ergo.LegacyConfigDigestAnnotation: digest}))

		By("the operator leaving the Deployment as it is: only the keys differ from what it would apply")
		// Moving a key alone would cost a write per child at upgrade and, for a Deployment, a new
		// generation (annotations count there), so the network would read as unavailable for a moment.
		Consistently(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(get(ctx, d, ns, "old")()).To(Succeed())
			g.Expect(d.Annotations).To(HaveKey(apply.LegacyDigestAnnotation), "the operator rewrote the Deployment")
			g.Expect(d.Annotations).NotTo(HaveKey(apply.DigestAnnotation), "the operator rewrote the Deployment")
			g.Expect(d.Spec.Template).To(Equal(legacy.Spec.Template), "the pod template changed: the pod would roll")
		}).WithTimeout(3 * time.Second).Should(Succeed())

		By("a config change rolling the pod, with the digest under the new key")
		update(ctx, ns, "old", func(n *ircv1.ErgoNetwork) { n.Spec.NetworkName = "Renamed" })
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(get(ctx, d, ns, "old")()).To(Succeed())
			g.Expect(d.Spec.Template.Annotations).To(HaveLen(1))
			g.Expect(d.Spec.Template.Annotations[ergo.ConfigDigestAnnotation]).NotTo(BeEmpty())
			g.Expect(d.Spec.Template.Annotations[ergo.ConfigDigestAnnotation]).NotTo(Equal(digest))
			g.Expect(d.Annotations).To(HaveKey(apply.DigestAnnotation))
			g.Expect(d.Annotations).NotTo(HaveKey(apply.LegacyDigestAnnotation), "the old key outlived a real change")
		}).Should(Succeed())
	})
})
