package irc

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	opmetrics "github.com/platform-operator/platform-operator/internal/kit/metrics"
	"github.com/platform-operator/platform-operator/internal/kit/metrics/instruments"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// errNotYet is a condition not written for the object's generation yet.
var errNotYet = errors.New("the condition is not for the current generation yet")

// The suite's manager runs the ErgoNetwork controller as main.go does; its config rollouts are counted
// where the ConfigMap is written.
var _ = Describe("metrics", func() {
	It("metrics: a new network's first ircd.yaml and a spec change that changes it are config rollouts", func(ctx SpecContext) {
		reg := prometheus.NewRegistry()
		Expect(opmetrics.Register(reg, k8s, nil)).To(Succeed())
		rollouts := func() float64 {
			return testenv.Metric(reg, "platform_operator_ergo_config_rollouts_total", map[string]string{"result": instruments.ResultSucceeded})
		}
		testenv.Metric(reg, "platform_operator_ergo_config_rollouts_total", map[string]string{"result": instruments.ResultFailed}) // there from the start

		ns := newNamespace()
		before := rollouts()
		n := ergotest.MinimalNetwork(ns, "rollout")
		Expect(k8s.Create(ctx, n)).To(Succeed())
		eventuallyNetwork(ctx, ns, "rollout", haveCondition(ircv1.ConditionConfig, metav1.ConditionTrue, ircv1.ReasonApplied))
		Eventually(rollouts).Should(BeNumerically(">", before))

		By("a new network name: another ircd.yaml")
		created := rollouts()
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "rollout"}, n)).To(Succeed())
		n.Spec.NetworkName = "RolloutNet"
		Expect(k8s.Update(ctx, n)).To(Succeed())
		eventuallyNetwork(ctx, ns, "rollout", func(got *ircv1.ErgoNetwork) error {
			if err := haveCondition(ircv1.ConditionConfig, metav1.ConditionTrue, ircv1.ReasonApplied)(got); err != nil {
				return err
			}
			if c := condition(got, ircv1.ConditionConfig); c.ObservedGeneration != got.Generation {
				return errNotYet
			}
			return nil
		})
		Eventually(rollouts).Should(BeNumerically(">", created))
	})
})
