package iot

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// lastBeat is the lastBeat of device id's lapsed record, read from the heartbeat bucket (nil: no lapsed
// record).
func lastBeat(id string) *time.Time {
	e, err := fleetStore.Heartbeats.Get(suiteCtx, fleet.DeviceKey(id))
	if err != nil {
		return nil
	}
	h, err := fleet.DecodeHeartbeat(e.Value())
	if err != nil || h.Lapsed == nil {
		return nil
	}
	return h.Lapsed.LastBeat
}

var _ = Describe("iot Deployment status: the reference's fields", func() {
	It("gives the oldest heartbeat while a selected device is stale and the newest once all are, to the minute, and drops both when they come back", func(ctx SpecContext) {
		ns := newNamespace()
		devices := fleettest.StartFleet(suiteCtx, fleetStore, ns+"-dev", ns, 2)
		DeferCleanup(stopAll, devices)
		d := createWeb(ctx, ns)
		Eventually(func() int32 { return get(ctx, d).Status.Aggregate.Succeeded }).Should(BeEquivalentTo(2))
		a := get(ctx, d).Status.Aggregate
		Expect(a.OldestHeartbeatAt).To(BeNil(), "no selected device is stale")
		Expect(a.NewestHeartbeatAt).To(BeNil())

		By("the first device going silent")
		stopped0 := time.Now()
		devices[0].Stop()
		Eventually(func() int32 { return get(ctx, d).Status.Aggregate.Stale }).Should(BeEquivalentTo(1))
		var beat0 time.Time
		Eventually(func(g Gomega) {
			b := lastBeat(ns + "-dev-0")
			g.Expect(b).NotTo(BeNil(), "the operator's lapsed record carries the device's last heartbeat")
			beat0 = *b
			a := get(ctx, d).Status.Aggregate
			g.Expect(a.OldestHeartbeatAt).NotTo(BeNil())
			g.Expect(a.OldestHeartbeatAt.Time.Equal(beat0.Truncate(fleet.BeatStep))).To(BeTrue(), "oldest %v, last heartbeat %v", a.OldestHeartbeatAt, beat0)
			g.Expect(a.NewestHeartbeatAt).To(BeNil(), "the other device is live")
		}).Should(Succeed())
		// The device beat every TTL/3 until it stopped: its last heartbeat is within that of the stop
		// (and the server's expiry dates it a little late at most).
		Expect(beat0).To(BeTemporally(">=", stopped0.Add(-heartbeatTTL/3-time.Second).Truncate(time.Second)))
		Expect(beat0).To(BeTemporally("<=", stopped0.Add(2*time.Second)))

		By("the second device going silent too")
		stopped1 := time.Now()
		devices[1].Stop()
		Eventually(func(g Gomega) {
			b := lastBeat(ns + "-dev-1")
			g.Expect(b).NotTo(BeNil())
			g.Expect(*b).To(BeTemporally(">=", stopped1.Add(-heartbeatTTL/3-time.Second).Truncate(time.Second)))
			a := get(ctx, d).Status.Aggregate
			g.Expect(a.Stale).To(BeEquivalentTo(2))
			g.Expect(a.OldestHeartbeatAt).NotTo(BeNil())
			g.Expect(a.OldestHeartbeatAt.Time.Equal(beat0.Truncate(fleet.BeatStep))).To(BeTrue())
			g.Expect(a.NewestHeartbeatAt).NotTo(BeNil(), "every selected device is stale")
			g.Expect(a.NewestHeartbeatAt.Time.Equal(b.Truncate(fleet.BeatStep))).To(BeTrue(), "newest %v, last heartbeat %v", a.NewestHeartbeatAt, *b)
		}).Should(Succeed())

		By("both coming back")
		for _, dev := range devices {
			dev.Start(suiteCtx)
		}
		Eventually(func(g Gomega) {
			a := get(ctx, d).Status.Aggregate
			g.Expect(a.Stale).To(BeEquivalentTo(0))
			g.Expect(a.OldestHeartbeatAt).To(BeNil())
			g.Expect(a.NewestHeartbeatAt).To(BeNil())
		}).Should(Succeed())
	})

	It("ranks recent events by severity, names the Deployment in each, and gives lastError's deviceId beside device", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 2)
		devices[0].Runtime.SetFail("registry.example/web:1", "manifest unknown")
		d := createWeb(ctx, ns)
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.Aggregate.Failed).To(BeEquivalentTo(1))
			le := got.Status.Aggregate.LastError
			g.Expect(le).NotTo(BeNil())
			g.Expect(le.DeviceID).To(Equal(ns + "-dev-0"))
			g.Expect(le.Device).To(Equal(le.DeviceID))
			g.Expect(got.Status.RecentEvents).NotTo(BeEmpty())
			e := got.Status.RecentEvents[0]
			g.Expect(e.Device).To(Equal(ns + "-dev-0"))
			g.Expect(e.Phase).To(Equal(string(fleet.PhaseFailed)))
			g.Expect(e.Severity).To(Equal(iotv1.SeverityError))
			g.Expect(e.Deployment).To(Equal("web"))
		}).Should(Succeed())

		By("the device's restart with the image fixed: it recovers, an Info event")
		devices[0].Runtime.SetFail("registry.example/web:1", "")
		devices[0].Stop()
		devices[0].Start(suiteCtx)
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.Aggregate.Succeeded).To(BeEquivalentTo(2))
			var severities []iotv1.EventSeverity
			for _, e := range got.Status.RecentEvents {
				g.Expect(e.Deployment).To(Equal("web"))
				severities = append(severities, e.Severity)
			}
			// Newest first: the recovery, then the failure.
			g.Expect(severities).To(Equal([]iotv1.EventSeverity{iotv1.SeverityInfo, iotv1.SeverityError}))
			g.Expect(got.Status.RecentEvents[0].Phase).To(Equal(string(fleet.PhaseRunning)))
		}).Should(Succeed())

		By("a new generation: the failure of the superseded one is a warning")
		got := get(ctx, d)
		got.Spec.Score.PodmanV0.Services[0].Image = "registry.example/web:2"
		Expect(k8s.Update(ctx, got)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(2))
			g.Expect(got.Status.Aggregate.Succeeded).To(BeEquivalentTo(2))
			var severities []iotv1.EventSeverity
			for _, e := range got.Status.RecentEvents {
				severities = append(severities, e.Severity)
			}
			g.Expect(severities).To(Equal([]iotv1.EventSeverity{iotv1.SeverityInfo, iotv1.SeverityWarn}))
		}).Should(Succeed())
	})
})
