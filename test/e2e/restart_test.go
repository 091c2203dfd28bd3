//go:build linux

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

const restartNetworks = 50

var _ = Describe("ErgoNetwork", func() {
	It("restart: the operator SIGKILLed while reconciling 50 networks, restarted, converges with no duplicate or orphaned child", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "oper", "restart"))).To(Succeed())

		By(fmt.Sprintf("creating %d networks before any operator runs", restartNetworks))
		names := make([]string, restartNetworks)
		for i := range names {
			names[i] = fmt.Sprintf("net-%02d", i)
		}
		createAll(ctx, ns, names)

		By("starting an operator throttled to one worker and 20 requests/s, so it is still busy when it dies")
		first := startOperator("restart-first", operatorConfig{namespace: ns,
			args: []string{"--max-concurrent-reconciles=1", "--kube-api-qps=20", "--kube-api-burst=20"}})
		reconciled := func() int {
			var list ircv1.ErgoNetworkList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			n := 0
			for _, net := range list.Items {
				if net.Status.ObservedGeneration > 0 {
					n++
				}
			}
			return n
		}
		Eventually(ctx, reconciled).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", 5))
		Expect(first.Kill()).To(Succeed())
		atKill := reconciled()
		var deployments appsv1.DeploymentList
		Expect(k8s.List(ctx, &deployments, client.InNamespace(ns))).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "SIGKILL with %d of %d networks reconciled, %d Deployments made\n",
			atKill, restartNetworks, len(deployments.Items))
		Expect(atKill).To(BeNumerically("<", restartNetworks),
			"the operator finished before it was killed: the scenario proves nothing; throttle it harder")

		By("restarting the operator with its defaults")
		startOperator("restart-second", operatorConfig{namespace: ns})
		Eventually(ctx, func(g Gomega) {
			var list ircv1.ErgoNetworkList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			ready := 0
			for i := range list.Items {
				if isReady(&list.Items[i]) {
					ready++
				}
			}
			g.Expect(ready).To(Equal(restartNetworks), "Ready networks")
		}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("every network has exactly its own children, nothing else is there, and nothing rolled twice")
		exactlyOnce := func(g Gomega) {
			var list ircv1.ErgoNetworkList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			uids := map[types.UID]string{}
			for _, n := range list.Items {
				uids[n.UID] = n.Name
			}
			g.Expect(uids).To(HaveLen(restartNetworks))

			managed := client.MatchingLabels{"app.kubernetes.io/managed-by": "platform-operator"}
			for _, c := range []struct {
				list   client.ObjectList
				suffix string
			}{
				{&corev1.ConfigMapList{}, "-config"},
				{&corev1.PersistentVolumeClaimList{}, "-data"},
				{&appsv1.DeploymentList{}, ""},
				{&corev1.ServiceList{}, ""},
			} {
				// Everything in the namespace, labelled or not: an orphan could have lost its labels.
				g.Expect(k8s.List(ctx, c.list, client.InNamespace(ns))).To(Succeed())
				items := objects(c.list)
				var names []string
				for _, o := range items {
					if o.GetName() == "kube-root-ca.crt" { // kube-controller-manager's, in every namespace
						continue
					}
					g.Expect(o.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "platform-operator"), describe(o))
					ref := metav1.GetControllerOf(o)
					g.Expect(ref).NotTo(BeNil(), "%s has no controller: an orphan", describe(o))
					owner, ok := uids[ref.UID]
					g.Expect(ok).To(BeTrue(), "%s is controlled by a network that does not exist", describe(o))
					g.Expect(o.GetName()).To(Equal(owner+c.suffix), describe(o))
					g.Expect(o.GetOwnerReferences()).To(HaveLen(1), describe(o))
					names = append(names, o.GetName())
				}
				g.Expect(names).To(HaveLen(restartNetworks), "%T", c.list)
				slices.Sort(names)
				g.Expect(slices.Compact(names)).To(HaveLen(restartNetworks), "%T: duplicate names", c.list)
				g.Expect(k8s.List(ctx, c.list, client.InNamespace(ns), managed)).To(Succeed())
				g.Expect(objects(c.list)).To(HaveLen(restartNetworks))
			}
			// These networks ask for no certificate and no route.
			var certs cmv1.CertificateList
			g.Expect(k8s.List(ctx, &certs, client.InNamespace(ns))).To(Succeed())
			g.Expect(certs.Items).To(BeEmpty())
			var routes routev1.RouteList
			g.Expect(k8s.List(ctx, &routes, client.InNamespace(ns))).To(Succeed())
			g.Expect(routes.Items).To(BeEmpty())

			var rss appsv1.ReplicaSetList
			g.Expect(k8s.List(ctx, &rss, client.InNamespace(ns))).To(Succeed())
			g.Expect(rss.Items).To(HaveLen(restartNetworks), "one ReplicaSet per Deployment: the restart rolled nothing")
			var pods corev1.PodList
			g.Expect(k8s.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(restartNetworks), "one pod per network")
			for _, p := range pods.Items {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), p.Name)
			}
		}
		Eventually(ctx, exactlyOnce).Should(Succeed())
		Consistently(ctx, exactlyOnce).Should(Succeed())
	})
})

// createAll creates one plain network per name, 10 at a time.
func createAll(ctx context.Context, ns string, names []string) {
	GinkgoHelper()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	sem := make(chan struct{}, 10)
	for _, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- k8s.Create(ctx, ergotest.PlainNetwork(ns, name, "oper"))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
}

// objects returns a list's items as client.Objects.
func objects(list client.ObjectList) []client.Object {
	GinkgoHelper()
	items, err := meta.ExtractList(list)
	Expect(err).NotTo(HaveOccurred())
	out := make([]client.Object, 0, len(items))
	for _, i := range items {
		out = append(out, i.(client.Object))
	}
	return out
}
