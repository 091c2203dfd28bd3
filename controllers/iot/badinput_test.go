package iot

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

var _ = Describe("iot Deployment with bad device input", func() {
	It("refuses a device's junk record with an event naming the device, keeps the honest counts, and shows device messages sanitized", func(ctx SpecContext) {
		ns := newNamespace()
		startDevices(ns, 2)
		d := createWeb(ctx, ns)
		Eventually(func() iotv1.Aggregate { return get(ctx, d).Status.Aggregate }).Should(Equal(iotv1.Aggregate{MatchedDevices: 2, Succeeded: 2, Updated: 2}))
		key := fleet.DeploymentKey{Namespace: ns, Name: "web"}
		refused := rejectedRecords.WithLabelValues(fleet.RecordsState, fleet.ReasonDecode)
		before := testutil.ToFloat64(refused)

		By("a device writing junk under its own key of the Deployment")
		evil := ns + "-evil"
		_, err := fleetStore.State.Put(ctx, fleet.StateKey(key, evil), []byte("\x1b[2J not a record"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Reason", EventRejectedRecord), HaveField("Type", corev1.EventTypeWarning),
				HaveField("InvolvedObject.Name", "web"), HaveField("Message", ContainSubstring("device "+evil)))))
		}).Should(Succeed())
		Expect(testutil.ToFloat64(refused)).To(BeNumerically(">", before))

		By("a device's failure message with terminal escapes, beyond the bound")
		dev0 := ns + "-dev-0"
		cur, err := fleetStore.StateOf(ctx, key, dev0)
		Expect(err).NotTo(HaveOccurred())
		Expect(cur).NotTo(BeNil())
		hostile := fleet.State{Version: fleet.ContractVersion, Generation: cur.Generation, Phase: fleet.PhaseFailed,
			PrevGeneration: cur.Generation, PrevPhase: cur.Phase, At: cur.At,
			Message: "\x1b]0;pwned\x07" + strings.Repeat("x", 3000)}
		_, err = fleetStore.State.Put(ctx, fleet.StateKey(key, dev0), fleet.Encode(hostile))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			a := get(ctx, d).Status.Aggregate
			g.Expect(a.Succeeded).To(BeEquivalentTo(1))
			g.Expect(a.Failed).To(BeEquivalentTo(1))
			g.Expect(a.LastError).NotTo(BeNil())
			g.Expect(a.LastError.Device).To(Equal(dev0))
			g.Expect(len(a.LastError.Message)).To(BeNumerically("<=", fleet.MaxMessageBytes))
			g.Expect(a.LastError.Message).To(HavePrefix("]0;pwned"))
			g.Expect(a.LastError.Message).NotTo(ContainSubstring("\x1b"))
		}).Should(Succeed())
		var events corev1.EventList
		Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		for _, e := range events.Items {
			Expect(e.Message).NotTo(ContainSubstring("\x1b"), "event %s", e.Reason)
		}
	})
})
