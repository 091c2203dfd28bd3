package irc

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

// warningCount counts the Warning events with reason about the network, repeats included: the event
// recorder folds a repeated event into the first one's count.
func warningCount(ctx context.Context, ns, name, reason string) func() int32 {
	return func() int32 {
		var list corev1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var n int32
		for _, e := range list.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == name && e.Reason == reason {
				n += max(e.Count, 1)
			}
		}
		return n
	}
}

// cachedCondition waits until the reconciler's own (cached) client shows the network's condition t with
// reason and a message containing text, for the network's current generation: a reconcile from then on
// reads, as the conditions before it, what the user has been told.
func cachedCondition(ctx context.Context, ns, name, t, reason, text string) {
	GinkgoHelper()
	Eventually(func() error {
		n := &ircv1.ErgoNetwork{}
		if err := reconciler.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, n); err != nil {
			return err
		}
		c := condition(n, t)
		switch {
		case c == nil:
			return fmt.Errorf("no %s condition yet", t)
		case c.Reason != reason || c.ObservedGeneration != n.Generation:
			return fmt.Errorf("%s is %s (generation %d of %d): %s", t, c.Reason, c.ObservedGeneration, n.Generation, c.Message)
		case text != "" && !strings.Contains(c.Message, text):
			return fmt.Errorf("%s says %q, not yet %q", t, c.Message, text)
		}
		return nil
	}).Should(Succeed())
}

// noRepeat reconciles the network three more times, as children's events and the resync do, each finding
// the same state, and checks that the Warnings count counts stay at want.
func noRepeat(ctx context.Context, ns, name string, count func() int32, want int32) {
	GinkgoHelper()
	for range 3 {
		_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		Expect(err).NotTo(HaveOccurred())
	}
	Consistently(count).WithTimeout(2*time.Second).Should(Equal(want), "the same failure found again must not be warned about again")
}

// The same failure found again, by any later reconcile, is no new Warning; a different one is. Each spec
// reconciles a failing network three more times and counts the Warning events: before the kit's Refuse
// and Said were used here, every one of those reconciles emitted the Warning again (the count would grow
// by three), so the Consistently is the property and the changed failure its positive control.
var _ = Describe("ErgoNetwork warnings", func() {
	var (
		ctx = context.Background()
		ns  string
	)
	BeforeEach(func() { ns = newNamespace() })

	It("warns once about the same oper Secret mistake, and again when the mistake changes", func() {
		Expect(k8s.Create(ctx, fullNetwork(ns, "once"))).To(Succeed())
		cachedCondition(ctx, ns, "once", ircv1.ConditionOperCredentials, ircv1.ReasonSecretNotFound, "")
		notFound := warningCount(ctx, ns, "once", ircv1.ReasonSecretNotFound)
		Eventually(notFound).Should(BeNumerically(">=", 1))
		noRepeat(ctx, ns, "once", notFound, notFound())

		By("a different mistake under the same reason: a new Warning (the message is what to fix)")
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once-oper"},
			Data: map[string][]byte{ircv1.DefaultOperSecretKey: []byte("hunter2-not-a-hash")}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		cachedCondition(ctx, ns, "once", ircv1.ConditionOperCredentials, ircv1.ReasonInvalidHash, "not a bcrypt hash")
		invalid := warningCount(ctx, ns, "once", ircv1.ReasonInvalidHash)
		Eventually(invalid).Should(BeNumerically(">=", 1))
		first := invalid()
		noRepeat(ctx, ns, "once", invalid, first)

		secret.Data[ircv1.DefaultOperSecretKey] = append(ergotest.OperHash("pw"), '\n')
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		cachedCondition(ctx, ns, "once", ircv1.ConditionOperCredentials, ircv1.ReasonInvalidHash, "trailing whitespace")
		Eventually(invalid).Should(Equal(first+1), "a changed message under the same reason is news")
		noRepeat(ctx, ns, "once", invalid, first+1)
	})

	It("warns once about a size the claim cannot shrink to, and again when the size asked for changes", func() {
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "shrink-oper", "pw"))).To(Succeed())
		Expect(k8s.Create(ctx, fullNetwork(ns, "shrink"))).To(Succeed())
		Eventually(get(ctx, &corev1.PersistentVolumeClaim{}, ns, "shrink-data")).Should(Succeed())

		update(ctx, ns, "shrink", func(n *ircv1.ErgoNetwork) { n.Spec.Storage.Size = ptr.To(resource.MustParse("512Mi")) })
		cachedCondition(ctx, ns, "shrink", ircv1.ConditionStorage, ircv1.ReasonClaimPending, "512Mi ignored")
		shrink := warningCount(ctx, ns, "shrink", ircv1.ReasonStorageShrink)
		Eventually(shrink).Should(BeNumerically(">=", 1))
		seen := shrink()
		noRepeat(ctx, ns, "shrink", shrink, seen)

		By("another size the claim cannot shrink to: a new Warning")
		update(ctx, ns, "shrink", func(n *ircv1.ErgoNetwork) { n.Spec.Storage.Size = ptr.To(resource.MustParse("256Mi")) })
		cachedCondition(ctx, ns, "shrink", ircv1.ConditionStorage, ircv1.ReasonClaimPending, "256Mi ignored")
		Eventually(shrink).Should(Equal(seen+1), "a different refused size is news")
		noRepeat(ctx, ns, "shrink", shrink, seen+1)
	})
})
