package irc

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

// The cache holds only what the operator labelled, so a user's object with a child's name is invisible
// to it: it must still never be applied over, owned or deleted.
var _ = Describe("a child's name taken by someone else's object", func() {
	It("leaves the object untouched, says so, and makes the child once the name is free", func() {
		ctx := context.Background()
		ns := newNamespace()
		theirs := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-config", Labels: map[string]string{"team": "a"}},
			Data:       map[string]string{"ircd.yaml": "mine"},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		Expect(k8s.Create(ctx, ergotest.MinimalNetwork(ns, "taken"))).To(Succeed())

		got := eventuallyNetwork(ctx, ns, "taken", haveCondition(ircv1.ConditionConfig, metav1.ConditionFalse, ircv1.ReasonNameConflict))
		Expect(condition(got, ircv1.ConditionConfig).Message).To(ContainSubstring("ConfigMap taken-config already exists and was not made by the operator"))
		Expect(condition(got, ircv1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		Eventually(warningEvents(ctx, ns, "taken")).Should(ContainElement(ircv1.ReasonNameConflict))
		Consistently(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(get(ctx, cm, ns, "taken-config")()).To(Succeed())
			g.Expect(cm.Data).To(Equal(map[string]string{"ircd.yaml": "mine"}))
			g.Expect(cm.Labels).To(Equal(map[string]string{"team": "a"}))
			g.Expect(cm.OwnerReferences).To(BeEmpty())
		}).Should(Succeed())

		By("the owner removing their object, and the periodic retry making the child")
		Expect(k8s.Delete(ctx, theirs)).To(Succeed())
		res, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "taken"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.RequeueAfter).NotTo(Equal(reconcile.ConflictRetry))
		eventuallyNetwork(ctx, ns, "taken", haveCondition(ircv1.ConditionConfig, metav1.ConditionTrue, ircv1.ReasonApplied))
	})
})
