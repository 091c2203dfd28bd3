//go:build linux

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

var _ = Describe("ErgoNetwork", func() {
	It("rollout: a spec change (listener added, network renamed) rolls the pod once, and only once", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		startOperator("rollout", operatorConfig{namespace: ns})
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "oper", "rollout"))).To(Succeed())
		n := ergotest.PlainNetwork(ns, "rolling", "oper")
		Expect(k8s.Create(ctx, n)).To(Succeed())
		Eventually(ctx, converged(ctx, ns, "rolling")).WithTimeout(90 * time.Second).Should(Succeed())

		key := client.ObjectKey{Namespace: ns, Name: "rolling"}
		dep := &appsv1.Deployment{}
		Expect(k8s.Get(ctx, key, dep)).To(Succeed())
		generation := dep.Generation
		Expect(replicaSetsOf(ctx, ns, "rolling")).To(HaveLen(1))
		before := podsOf(ctx, ns, "rolling")
		Expect(before).To(HaveLen(1))

		By("adding a listener and renaming the network in one spec change")
		Expect(k8s.Get(ctx, key, n)).To(Succeed())
		orig := n.DeepCopy()
		n.Spec.Listeners = append(n.Spec.Listeners, ircv1.Listener{Address: ":6668"})
		n.Spec.NetworkName = "Renamed"
		Expect(k8s.Patch(ctx, n, client.MergeFrom(orig))).To(Succeed())

		rolledOnce := func(g Gomega) {
			got, err := getNetwork(ctx, ns, "rolling")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(isReady(got)).To(BeTrue(), "network Ready for generation %d: %+v", got.Generation, got.Status.Conditions)
			g.Expect(got.Status.NetworkName).To(Equal("Renamed"))

			g.Expect(k8s.Get(ctx, key, dep)).To(Succeed())
			g.Expect(dep.Generation).To(Equal(generation+1), "the Deployment's spec changed exactly once")
			deploymentAvailable(g, dep)
			g.Expect(dep.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "2"))
			rss := replicaSetsOf(ctx, ns, "rolling")
			g.Expect(rss).To(HaveLen(2), "one ReplicaSet per rollout: the first and exactly one more")
			for _, rs := range rss {
				if rs.Annotations["deployment.kubernetes.io/revision"] == "1" {
					g.Expect(*rs.Spec.Replicas).To(BeZero(), "the old ReplicaSet is scaled down")
				}
			}
			pods := podsOf(ctx, ns, "rolling")
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].UID).NotTo(Equal(before[0].UID), "the pod was replaced")
			g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning))
		}
		Eventually(ctx, rolledOnce).WithTimeout(90 * time.Second).Should(Succeed())
		after := podsOf(ctx, ns, "rolling")

		By("and nothing rolls again once it has settled")
		Consistently(ctx, func(g Gomega) {
			rolledOnce(g)
			pods := podsOf(ctx, ns, "rolling")
			g.Expect(pods[0].UID).To(Equal(after[0].UID), "the new pod stays")
		}).WithTimeout(5 * time.Second).Should(Succeed())

		By("the new config and Service carry the change")
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rolling-config"}, cm)).To(Succeed())
		var conf struct {
			Network struct{ Name string } `json:"network"`
			Server  struct {
				Listeners map[string]any `json:"listeners"`
			} `json:"server"`
		}
		Expect(yaml.Unmarshal([]byte(cm.Data["ircd.yaml"]), &conf)).To(Succeed())
		Expect(conf.Network.Name).To(Equal("Renamed"))
		Expect(conf.Server.Listeners).To(HaveKey(":6668"))
		svc := &corev1.Service{}
		Expect(k8s.Get(ctx, key, svc)).To(Succeed())
		Expect(svc.Spec.Ports).To(HaveLen(2))
	})
})
