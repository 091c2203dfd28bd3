package irc

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/apply"
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// An operator upgrade from one defaulting to ergo v2.14.0 (datastore schema 23) to one defaulting to
// v2.19.1 (schema 24), on a control plane of its own: the operator's image is per process, so the
// "old" and the "new" operator are two managers run one after the other, as an upgrade runs them. A
// network whose datastore v2.19.1 would refuse keeps v2.14.0 and serves until its owner allows the
// upgrade; the controls (a v2.15.0 network, a new network, autoUpgrade) roll as before.
var _ = Describe("an operator upgrade to an ergo that needs a newer datastore schema", Ordered, func() {
	const (
		v2140 = "ghcr.io/ergochat/ergo:v2.14.0"
		v2150 = "ghcr.io/ergochat/ergo:v2.15.0"
		v2191 = "ghcr.io/ergochat/ergo:v2.19.1"
	)
	var (
		ctx   = context.Background()
		env   *testenv.Env
		c     client.Client
		ns    string
		r     *ErgoNetworkReconciler
		count = &testutil.WriteCounter{}
		// stopOld and stop stop the old and the new operator (once each; AfterAll stops what a failure
		// left running).
		stopOld, stop func()
	)

	// runOperator runs the irc group with ergo image image; the function it returns stops the manager
	// and waits until it has returned, so two operators never run at once.
	runOperator := func(image string, counter *testutil.WriteCounter) (*ErgoNetworkReconciler, func()) {
		GinkgoHelper()
		caps, err := platform.Discover(env.Config)
		Expect(err).NotTo(HaveOccurred())
		rec := &ErgoNetworkReconciler{Image: image, MaxConcurrentReconciles: 2}
		mgr, err := manager.New(env.Config, testenv.ManagerOptions(counter), caps, groupOf(ergoNetworks(rec)))
		Expect(err).NotTo(HaveOccurred())
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
		var once sync.Once
		return rec, func() {
			once.Do(func() { cancel(); Eventually(done).WithTimeout(time.Minute).Should(BeClosed()) })
		}
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	deployment := func(name string) *appsv1.Deployment {
		GinkgoHelper()
		d := &appsv1.Deployment{}
		Expect(c.Get(ctx, key(name), d)).To(Succeed())
		return d
	}
	image := func(name string) func() string {
		return func() string {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, key(name), d); err != nil {
				return err.Error()
			}
			return ergo.RunningImage(d)
		}
	}
	imageCondition := func(name string) func() metav1.Condition {
		return func() metav1.Condition {
			n := &ircv1.ErgoNetwork{}
			Expect(c.Get(ctx, key(name), n)).To(Succeed())
			if cond := meta.FindStatusCondition(n.Status.Conditions, ircv1.ConditionImageCurrent); cond != nil {
				return *cond
			}
			return metav1.Condition{}
		}
	}
	// warnings counts the DatastoreUpgradeRequired Warning events about name, repeats included: the
	// event recorder folds a repeated event into the first one's count.
	warnings := func(name string) func() int32 {
		return func() int32 {
			var list corev1.EventList
			Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var n int32
			for _, e := range list.Items {
				if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == name && e.Reason == ircv1.ReasonDatastoreUpgradeRequired {
					n += max(e.Count, 1)
				}
			}
			return n
		}
	}

	BeforeAll(func() {
		var err error
		env, err = testenv.Start(testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		ns = testenv.NewNamespace(c, "upgrade")

		By("an operator on ergo v2.14.0 running two networks")
		_, stopOld = runOperator(v2140, nil)
		for _, name := range []string{"held", "same"} {
			Expect(c.Create(ctx, ergotest.MinimalNetwork(ns, name))).To(Succeed())
			Eventually(image(name)).Should(Equal(v2140))
			Expect(ergotest.MarkDeploymentAvailable(ctx, c, ns, name)).To(Succeed())
			Expect(ergotest.MarkClaimBound(ctx, c, ns, name+"-data")).To(Succeed())
			Eventually(func(g Gomega) {
				n := &ircv1.ErgoNetwork{}
				g.Expect(c.Get(ctx, key(name), n)).To(Succeed())
				ready := meta.FindStatusCondition(n.Status.Conditions, ircv1.ConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			}).Should(Succeed())
		}
		stopOld()

		By("network same as an operator on ergo v2.15.0 (schema 24 already) left it")
		n := &ircv1.ErgoNetwork{}
		Expect(c.Get(ctx, key("same"), n)).To(Succeed())
		digest := deployment("same").Spec.Template.Annotations[ergo.ConfigDigestAnnotation]
		Expect(digest).NotTo(BeEmpty())
		old, err := apply.ToUnstructured(ergo.Deployment(n, ergo.Options{Image: v2150}, digest))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Apply(ctx, client.ApplyConfigurationFromUnstructured(old),
			client.FieldOwner(oplabels.FieldOwner), client.ForceOwnership)).To(Succeed())
		Expect(image("same")()).To(Equal(v2150))
		Expect(ergotest.MarkDeploymentAvailable(ctx, c, ns, "same")).To(Succeed())

		By("upgrading the operator to one on ergo v2.19.1")
		r, stop = runOperator(v2191, count)
	})
	AfterAll(func() {
		for _, f := range []func(){stopOld, stop} {
			if f != nil {
				f()
			}
		}
		Expect(env.Stop()).To(Succeed())
	})

	It("keeps v2.14.0 running, says why once, and stays Ready", func() {
		Eventually(imageCondition("held")).Should(HaveField("Reason", ircv1.ReasonDatastoreUpgradeRequired))
		cond := imageCondition("held")()
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Message).To(And(ContainSubstring("v2.14.0"), ContainSubstring("v2.19.1"),
			ContainSubstring("spec.storage.autoUpgrade: true")))
		Consistently(image("held")).WithTimeout(3 * time.Second).Should(Equal(v2140))
		Expect(deployment("held").Generation).To(Equal(int64(1)), "the pod template changed: the pod rolled")

		n := &ircv1.ErgoNetwork{}
		Expect(c.Get(ctx, key("held"), n)).To(Succeed())
		ready := meta.FindStatusCondition(n.Status.Conditions, ircv1.ConditionReady)
		Expect(ready.Status).To(Equal(metav1.ConditionTrue), "a held network serves: Ready must not read ImageCurrent (%s)", ready.Message)

		By("a re-reconcile of the held network writing nothing and warning no more")
		Eventually(func(g Gomega) {
			before := count.In(ns)
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key("held")})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(count.In(ns) - before).To(BeZero())
		}).Should(Succeed())
		rvNet, rvDep := n.ResourceVersion, deployment("held").ResourceVersion
		before := count.In(ns)
		for range 3 {
			_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key("held")})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(count.Since(ns, before)).To(BeEmpty(), "a held, unchanged network must cost no write")
		Expect(c.Get(ctx, key("held"), n)).To(Succeed())
		Expect(n.ResourceVersion).To(Equal(rvNet))
		Expect(deployment("held").ResourceVersion).To(Equal(rvDep))
		Eventually(warnings("held")).Should(Equal(int32(1)))
		Consistently(warnings("held")).WithTimeout(2*time.Second).Should(Equal(int32(1)), "the Warning must go out once, when the network comes to be held")
	})

	It("rolls a network whose datastore already has v2.19.1's schema (v2.15.0) without autoUpgrade", func() {
		Eventually(image("same")).Should(Equal(v2191))
		Eventually(imageCondition("same")).Should(HaveField("Reason", ircv1.ReasonImageCurrent))
		Expect(imageCondition("same")().Status).To(Equal(metav1.ConditionTrue))
		Expect(warnings("same")()).To(BeZero())
	})

	It("gives a new network v2.19.1", func() {
		Expect(c.Create(ctx, ergotest.MinimalNetwork(ns, "fresh"))).To(Succeed())
		Eventually(image("fresh")).Should(Equal(v2191))
		Eventually(imageCondition("fresh")).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("rolls the held network to v2.19.1, with autoupgrade in its config, once autoUpgrade is set", func() {
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &ircv1.ErgoNetwork{}
			if err := c.Get(ctx, key("held"), n); err != nil {
				return err
			}
			n.Spec.Storage.AutoUpgrade = true
			return c.Update(ctx, n)
		})).To(Succeed())
		Eventually(image("held")).Should(Equal(v2191))
		cm := &corev1.ConfigMap{}
		Expect(c.Get(ctx, key(ergo.ConfigMapName(ergotest.MinimalNetwork(ns, "held"))), cm)).To(Succeed())
		Expect(cm.Data[ergo.ConfigKey]).To(MatchRegexp(`(?m)^\s+autoupgrade: true$`))
		Eventually(imageCondition("held")).Should(HaveField("Reason", ircv1.ReasonImageCurrent))
		Expect(warnings("held")()).To(Equal(int32(1)))
	})
})
