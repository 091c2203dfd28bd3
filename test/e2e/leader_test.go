//go:build linux

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// Short lease timings keep the scenario quick; the ratios are the defaults' (15s/10s/2s).
var testLease = localcluster.LeaderElection{LeaseDuration: 8 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: time.Second}

var _ = Describe("ErgoNetwork", func() {
	It("leader election: only the leader reconciles; when it is killed the other takes over within the lease duration", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "oper", "leader"))).To(Succeed())
		cfg := operatorConfig{namespace: ns, leaderElection: &testLease}

		By("starting one operator, then a second once the first leads")
		first := startOperator("leader-first", cfg)
		Eventually(ctx, first.leading).Should(BeTrue(), "the first operator never became leader")
		second := startOperator("leader-second", cfg)
		lease := &coordinationv1.Lease{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: manager.LeaderElectionID}, lease)).To(Succeed())
		firstHolder := ptr.Deref(lease.Spec.HolderIdentity, "")
		Expect(firstHolder).NotTo(BeEmpty())

		By("a network is reconciled by the leader alone")
		Expect(k8s.Create(ctx, ergotest.PlainNetwork(ns, "before", "oper"))).To(Succeed())
		Eventually(ctx, converged(ctx, ns, "before")).WithTimeout(90 * time.Second).Should(Succeed())
		Expect(first.reconciles()).To(BeNumerically(">", 0))
		Consistently(ctx, func(g Gomega) {
			g.Expect(second.leading()).To(BeFalse())
			g.Expect(second.reconciles()).To(BeZero(), "the follower reconciled")
		}).Should(Succeed())

		By("killing the leader with SIGKILL: it cannot release the lease, so the follower waits for it to expire")
		Expect(first.Kill()).To(Succeed())
		killed := time.Now()
		Expect(k8s.Create(ctx, ergotest.PlainNetwork(ns, "after", "oper"))).To(Succeed())
		var tookOver time.Duration
		Eventually(ctx, func(g Gomega) {
			g.Expect(second.leading()).To(BeTrue())
			tookOver = time.Since(killed)
		}).WithTimeout(testLease.LeaseDuration + 15*time.Second).Should(Succeed())
		// The network created meanwhile must be Ready within the lease duration plus a few seconds (the
		// rollout on the fake node takes about one).
		Eventually(ctx, converged(ctx, ns, "after")).WithTimeout(testLease.LeaseDuration + 20*time.Second).Should(Succeed())
		readyAfter := time.Since(killed)
		timings.Record("leader election: takeover after SIGKILL", tookOver, fmt.Sprintf("(lease %s)", testLease.LeaseDuration))
		timings.Record("leader election: network created meanwhile Ready", readyAfter, fmt.Sprintf("(lease %s)", testLease.LeaseDuration))
		Expect(second.reconciles()).To(BeNumerically(">", 0))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: manager.LeaderElectionID}, lease)).To(Succeed())
		Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).NotTo(Equal(firstHolder))
	})
})
