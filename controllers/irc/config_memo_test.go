package irc

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
)

// renders counts, per namespace, how often the suite's reconciler rendered an ircd.yaml.
var renders = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

func countRender(key types.NamespacedName) {
	renders.Lock()
	defer renders.Unlock()
	renders.n[key.Namespace]++
}

func rendersIn(ns string) int {
	renders.Lock()
	defer renders.Unlock()
	return renders.n[ns]
}

// A converged network must cost neither a write nor a rendering of its config when nothing changed: not
// while the operator runs, and not after a restart, whose memory of the network is gone.
var _ = Describe("the config of an unchanged network", func() {
	var (
		ctx context.Context
		ns  string
		req ctrl.Request
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace()
		req = ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "memo"}}
		readyFullNetwork(ctx, ns, "memo")
		reconcileUntilQuiet(ctx, ns, "memo")
	})

	// restart forgets the network as a new operator process has never known it.
	restart := func() {
		reconciler.secrets.forget(req.NamespacedName)
		reconciler.applier.Forget(req.NamespacedName)
		reconciler.status.Forget(req.NamespacedName)
	}
	reconcileQuietly := func() {
		GinkgoHelper()
		beforeWrites, beforeRenders := writes.In(ns), rendersIn(ns)
		_, err := reconciler.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(writes.In(ns)-beforeWrites).To(BeZero(), "writes")
		Expect(rendersIn(ns)-beforeRenders).To(BeZero(), "renderings of ircd.yaml")
	}

	It("is not rendered again, while the operator runs or after a restart", func() {
		cm := &corev1.ConfigMap{}
		Expect(get(ctx, cm, ns, "memo-config")()).To(Succeed())
		Expect(cm.Annotations).To(HaveKey(ergo.ConfigSourceAnnotation))
		Expect(cm.Annotations).To(HaveKey(ergo.ConfigStateAnnotation))
		digest := templateDigest(ctx, ns, "memo")

		reconcileQuietly()
		restart()
		reconcileQuietly()
		Expect(templateDigest(ctx, ns, "memo")).To(Equal(digest), "the pod's config digest from the ConfigMap's state")

		By("rendering again when another writer changed the ConfigMap, and repairing it")
		Expect(get(ctx, cm, ns, "memo-config")()).To(Succeed())
		want := cm.Data[ergo.ConfigKey]
		cm.Data[ergo.ConfigKey] = "server: {}\n"
		Expect(k8s.Update(ctx, cm)).To(Succeed())
		restart()
		Eventually(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(get(ctx, got, ns, "memo-config")()).To(Succeed())
			g.Expect(got.Data[ergo.ConfigKey]).To(Equal(want))
		}).Should(Succeed())
		Expect(templateDigest(ctx, ns, "memo")).To(Equal(digest))
	})

	It("leaves a ConfigMap an earlier version made as it is, and annotates it with the next config change", func() {
		By("applying the ConfigMap without its source, as versions before config sources did")
		n := &ircv1.ErgoNetwork{}
		Expect(get(ctx, n, ns, "memo")()).To(Succeed())
		rendered, err := ergo.RenderConfig(ergo.BuildConfig(n, true))
		Expect(err).NotTo(HaveOccurred())
		old, err := apply.ToUnstructured(ergo.ConfigMap(n, rendered))
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(old),
			client.FieldOwner(oplabels.FieldOwner), client.ForceOwnership)).To(Succeed())
		// The running operator sees the change too, and leaves a ConfigMap that holds the config.
		Eventually(func(g Gomega) {
			live := &corev1.ConfigMap{}
			g.Expect(reconciler.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "memo-config"}, live)).To(Succeed())
			g.Expect(live.Annotations).NotTo(HaveKey(ergo.ConfigSourceAnnotation))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			live := &corev1.ConfigMap{}
			g.Expect(get(ctx, live, ns, "memo-config")()).To(Succeed())
			g.Expect(live.Annotations).NotTo(HaveKey(ergo.ConfigSourceAnnotation))
		}).Should(Succeed())
		restart()

		By("reconciling after the upgrade: no write, and the config rendered once to compare")
		before, beforeRenders := writes.In(ns), rendersIn(ns)
		_, err = reconciler.Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(writes.In(ns) - before).To(BeZero())
		Expect(rendersIn(ns) - beforeRenders).To(Equal(1))
		reconcileQuietly()
		cm := &corev1.ConfigMap{}
		Expect(get(ctx, cm, ns, "memo-config")()).To(Succeed())
		Expect(cm.Annotations).NotTo(HaveKey(ergo.ConfigSourceAnnotation))

		By("a config change writing the new config with its source")
		update(ctx, ns, "memo", func(n *ircv1.ErgoNetwork) { n.Spec.NetworkName = "Renamed" })
		Eventually(func(g Gomega) {
			got := &corev1.ConfigMap{}
			g.Expect(get(ctx, got, ns, "memo-config")()).To(Succeed())
			g.Expect(got.Data[ergo.ConfigKey]).To(ContainSubstring("Renamed"))
			g.Expect(got.Annotations).To(HaveKey(ergo.ConfigSourceAnnotation))
		}).Should(Succeed())
	})
})
