package irc

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// A plain Kubernetes cluster without cert-manager or OpenShift: the operator must start, run networks
// that need neither, and say in status why a network that asks for them cannot have them.
var _ = Describe("on a cluster without cert-manager and Routes", Ordered, func() {
	var (
		ctx    context.Context
		cancel context.CancelFunc
		env    *testenv.Env
		c      client.Client
		r      *ErgoNetworkReconciler
		count  = &testutil.WriteCounter{}
	)
	BeforeAll(func() {
		ctx, cancel = context.WithCancel(context.Background())
		var err error
		env, err = testenv.Start(testenv.Options{})
		Expect(err).NotTo(HaveOccurred())
		c = env.Client
		r = startManager(ctx, env.Config, count)
	})
	AfterAll(func() {
		cancel()
		Expect(env.Stop()).To(Succeed())
	})

	It("discovers that neither API is served", func() {
		// The operator's own backup API is: its CRDs are the repository's.
		Expect(r.Capabilities).To(Equal(platform.Capabilities{Backups: true}))
	})

	It("reports a network that asks for TLS and a Route, and still runs the rest of it", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plain-"}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		n := fullNetwork(ns.Name, "net")
		n.Spec.OperCredentials = nil
		Expect(c.Create(ctx, n)).To(Succeed())

		Eventually(func(g Gomega) {
			got := &ircv1.ErgoNetwork{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(n), got)).To(Succeed())
			for _, t := range []string{ircv1.ConditionCertificate, ircv1.ConditionRoute} {
				cond := condition(got, t)
				g.Expect(cond).NotTo(BeNil(), t)
				g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), t)
				g.Expect(cond.Reason).To(Equal(ircv1.ReasonAPINotAvailable), t)
			}
			g.Expect(condition(got, ircv1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(condition(got, ircv1.ConditionReady).Message).To(ContainSubstring("cert-manager"))
		}).Should(Succeed())
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "net"}, &appsv1.Deployment{})
		}).Should(Succeed())
	})
})
