//go:build linux

package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
)

// The iot scenario runs the operator binary against an in-process NATS server with JetStream (127.0.0.1,
// started and stopped by the scenario) and three simulated devices: the real agent with a fake container
// runtime (internal/iot/fleet/fleettest). The server enforces the fleet's permissions as shipped: the
// operator runs with the operator's credentials, each device on its own connection with its own.
var _ = Describe("iot Deployment", func() {
	It("reaches Ready across its devices through NATS, and its deletion clears their desired state", func(ctx SpecContext) {
		srv, err := fleettest.StartAuthorizedServer(nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Shutdown)
		fleetCtx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		nc, st, err := srv.ConnectOperator(fleetCtx, 0)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)

		ns := newNamespace(ctx, nil)
		startOperator("iot", operatorConfig{namespace: ns, args: []string{"--nats-url=" + srv.ClientURL(),
			"--nats-credentials-file=" + srv.OperatorCreds, "--iot-fleet-policy=" + ns + "=fleet:" + ns,
			// The policy's key counts only from the devices' credentials, which StartFleet issues with it.
			"--iot-fleet-account-jwt=" + srv.AccountJWT()}})
		devices, err := srv.StartFleet(fleetCtx, ns+"-dev", ns, 3)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			for _, d := range devices {
				d.Stop()
			}
		})

		d := fleettest.Deployment(ns, "web", ns, "registry.example/web:1")
		key := fleet.DeploymentKey{Namespace: ns, Name: "web"}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			got := &iotv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), got)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, iotv1.ConditionReady)).To(BeTrue(), "conditions: %+v", got.Status.Conditions)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Aggregate).To(Equal(iotv1.Aggregate{MatchedDevices: 3, Succeeded: 3, Updated: 3}))
		}).Should(Succeed())
		Expect(desiredOf(ctx, st, key)).To(Equal(map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 1, ns + "-dev-2": 1}))
		for _, dev := range devices {
			score, ok := dev.Runtime.Running(key)
			Expect(ok).To(BeTrue(), "device %s runs nothing", dev.Info.ID)
			Expect(score.PodmanV0.Services[0].Image).To(Equal("registry.example/web:1"))
		}

		By("deleting the Deployment")
		Expect(k8s.Delete(ctx, d)).To(Succeed())
		Eventually(ctx, gone(ctx, d)).Should(Succeed())
		Expect(desiredOf(ctx, st, key)).To(BeEmpty())
		for _, dev := range devices {
			Eventually(ctx, func() bool { _, ok := dev.Runtime.Running(key); return ok }).Should(BeFalse(), "device %s still runs it", dev.Info.ID)
		}
	})
})

// desiredOf is each device's desired generation for d, read from NATS.
func desiredOf(ctx context.Context, st *store.Store, d fleet.DeploymentKey) map[string]int64 {
	GinkgoHelper()
	out := map[string]int64{}
	Expect(st.EachDesired(ctx, d, func(device string, des *fleet.Desired) { out[device] = des.Generation })).To(Succeed())
	return out
}
