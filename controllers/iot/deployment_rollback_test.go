package iot

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// The rollbacks of rollout.onFailure (docs/iot.md, "Rollbacks"): the real agent on simulated devices,
// whose fake runtime fails the images a spec says.

// runningImage is the image device runs for Deployment "web" of ns ("" when it runs none).
func runningImage(dev *fleettest.Device, ns string) string {
	score, ok := dev.Runtime.Running(fleet.DeploymentKey{Namespace: ns, Name: "web"})
	if !ok {
		return ""
	}
	return score.PodmanV0.Services[0].Image
}

// revisionGenerations are the generations whose score d's ControllerRevisions keep, as the API server
// has them.
func revisionGenerations(ctx context.Context, d *iotv1.Deployment) []int64 {
	var list appsv1.ControllerRevisionList
	Expect(k8s.List(ctx, &list, client.InNamespace(d.Namespace), client.MatchingLabels(revisionLabels(d)))).To(Succeed())
	var out []int64
	for _, rev := range list.Items {
		out = append(out, rev.Revision)
	}
	return out
}

// eventReasons are the "<type> <reason>" of the events about object name in ns.
func eventReasons(ctx context.Context, ns, name string) []string {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e.Type+" "+e.Reason)
		}
	}
	return out
}

// eventCount is how many times (Event.count summed) an event of type and reason was emitted about object
// name in ns.
func eventCount(ctx context.Context, ns, name, eventType, reason string) int32 {
	var list corev1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Type == eventType && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}

// batchedWeb creates "web" of registry.example/web:1 for ns's devices, batched, with onFailure, and
// waits until every device runs it.
func batchedWeb(ctx context.Context, ns string, size, maxUnavailable, threshold int32, onFailure iotv1.RolloutFailurePolicy, devices int) *iotv1.Deployment {
	GinkgoHelper()
	d := fleettest.Deployment(ns, "web", ns, "registry.example/web:1")
	d.Spec.Rollout = iotv1.Rollout{Strategy: iotv1.RolloutBatched, OnFailure: onFailure, Batched: &iotv1.BatchedRollout{
		BatchSize: intstr.FromInt32(size), SuccessThreshold: threshold, MaxUnavailable: intstr.FromInt32(maxUnavailable)}}
	Expect(k8s.Create(ctx, d)).To(Succeed())
	Eventually(func(g Gomega) {
		got := get(ctx, d)
		g.Expect(got.Status.Aggregate.Succeeded).To(BeEquivalentTo(devices))
		g.Expect(condition(got, iotv1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed())
	return d
}

// setImage updates d's image (a new generation).
func setImage(ctx context.Context, d *iotv1.Deployment, image string, edit ...func(*iotv1.Deployment)) {
	GinkgoHelper()
	Eventually(func() error {
		got := get(ctx, d)
		got.Spec.Score.PodmanV0.Services[0].Image = image
		for _, e := range edit {
			e(got)
		}
		return k8s.Update(ctx, got)
	}).Should(Succeed())
}

var _ = Describe("iot Deployment rollbacks", func() {
	// The failing batch: devices 0 and 1 get generation 2 first (batchSize 2), device 1 cannot run it
	// (maxUnavailable 0); devices 2 and 3 are never given it.
	failFirstBatch := func(ctx context.Context, onFailure iotv1.RolloutFailurePolicy) (string, []*fleettest.Device, *iotv1.Deployment, []int) {
		ns := newNamespace()
		devices := startDevices(ns, 4)
		for _, dev := range devices {
			dev.Runtime.SetFail("registry.example/web:2", "manifest unknown")
		}
		devices[0].Runtime.SetFail("registry.example/web:2", "") // device 0 runs it
		d := batchedWeb(ctx, ns, 2, 0, 100, onFailure, 4)
		Eventually(func() []int64 { return revisionGenerations(ctx, d) }).Should(Equal([]int64{1}))
		applies := []int{}
		for _, dev := range devices {
			applies = append(applies, dev.Runtime.Applies())
		}
		setImage(ctx, d, "registry.example/web:2")
		return ns, devices, d, applies
	}

	It("gives the devices that received a failed generation the previous successful score again, never publishes the failed one again, and rolls a new spec out", func(ctx SpecContext) {
		begun := testutil.ToFloat64(rollbacks.WithLabelValues(iotv1.ReasonTooManyFailures))
		ns, devices, d, applies := failFirstBatch(ctx, iotv1.RolloutFailureRollback)
		key := fleet.DeploymentKey{Namespace: ns, Name: "web"}

		Eventually(func(g Gomega) {
			got := get(ctx, d)
			c := condition(got, iotv1.ConditionProgressing)
			g.Expect(c.Reason).To(Equal(iotv1.ReasonRolledBack))
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(HavePrefix("rolled back to generation 1: generation 2 failed (TooManyFailures), and the 2 devices that received it were given generation 1 again (2 run it, 0 failed it)"))
			g.Expect(got.Status.RolledBackTo).NotTo(BeNil())
			g.Expect(got.Status.RolledBackTo.Generation).To(BeEquivalentTo(1))
			g.Expect(got.Status.RolledBackTo.FailedGeneration).To(BeEquivalentTo(2))
			g.Expect(got.Status.RolledBackTo.Reason).To(Equal(iotv1.ReasonTooManyFailures))
			g.Expect(condition(got, iotv1.ConditionReady).Reason).To(Equal(iotv1.ReasonRolledBack))
			g.Expect(condition(got, iotv1.ConditionAvailable).Reason).To(Equal(iotv1.ReasonRolledBack))
			// The aggregate is generation 2's: no device reports it any more.
			g.Expect(got.Status.Aggregate).To(Equal(iotv1.Aggregate{MatchedDevices: 4, Pending: 4, LastError: got.Status.Aggregate.LastError}))
			g.Expect(got.Status.PublishedDevices).To(BeEquivalentTo(0))
		}).Should(Succeed())

		By("every device running generation 1's score again, the two given generation 2 on a desired state that says so")
		for i, dev := range devices {
			Expect(runningImage(dev, ns)).To(Equal("registry.example/web:1"), "device %d", i)
			st, err := fleetStore.StateOf(ctx, key, dev.Info.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Generation).To(BeEquivalentTo(1), "device %d", i)
			Expect(st.Phase).To(Equal(fleet.PhaseRunning), "device %d", i)
		}
		rolled := map[string]int64{}
		Expect(fleetStore.EachDesired(ctx, key, func(device string, des *fleet.Desired) {
			Expect(des.Generation).To(BeEquivalentTo(1))
			Expect(des.Score.PodmanV0.Services[0].Image).To(Equal("registry.example/web:1"))
			if des.RollbackOf != 0 {
				rolled[device] = des.RollbackOf
			}
		})).To(Succeed())
		Expect(rolled).To(Equal(map[string]int64{ns + "-dev-0": 2, ns + "-dev-1": 2}))
		By("devices never given generation 2 untouched")
		Expect(devices[2].Runtime.Applies()).To(Equal(applies[2]))
		Expect(devices[3].Runtime.Applies()).To(Equal(applies[3]))

		By("the counters exact: every device counted on generation 1, none on generation 2")
		snap := reconciler.counters.Snapshot(key)
		Expect(snap.ByGeneration[1]).To(Equal(fleet.PhaseCounts{Running: 4}))
		Expect(snap.ByGeneration[2]).To(Equal(fleet.PhaseCounts{}))

		By("the failed generation not published again")
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "2s").Should(Equal(
			map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 1, ns + "-dev-2": 1, ns + "-dev-3": 1}))
		Expect(eventReasons(ctx, ns, "web")).To(ContainElements("Warning "+iotv1.ReasonRollingBack, "Normal "+iotv1.ReasonRolledBack))
		Expect(eventReasons(ctx, ns, "web")).NotTo(ContainElement("Warning " + iotv1.ReasonRollbackUnavailable))
		By("the rollback's Warning and its end said once, however often the fleet woke the Deployment")
		Expect(eventCount(ctx, ns, "web", corev1.EventTypeWarning, iotv1.ReasonRollingBack)).To(BeEquivalentTo(1))
		Expect(eventCount(ctx, ns, "web", corev1.EventTypeNormal, iotv1.ReasonRolledBack)).To(BeEquivalentTo(1))
		Expect(testutil.ToFloat64(rollbacks.WithLabelValues(iotv1.ReasonTooManyFailures))).To(BeNumerically(">=", begun+1))
		By("a rolled-back Deployment reconciled again: no write, no event")
		rv, before, n := get(ctx, d).ResourceVersion, writes.In(ns), reconciler.reconciles.Load()
		reconciler.wakeUp(ctx, client.ObjectKeyFromObject(d))
		Eventually(reconciler.reconciles.Load).Should(BeNumerically(">", n))
		Consistently(func() int32 { return eventCount(ctx, ns, "web", corev1.EventTypeNormal, iotv1.ReasonRolledBack) }, "1s").Should(BeEquivalentTo(1))
		Expect(writes.In(ns)).To(Equal(before), "writes on an unchanged re-reconcile")
		Expect(get(ctx, d).ResourceVersion).To(Equal(rv))

		By("a new spec (generation 3, an image every device runs, one revision kept) rolling out normally")
		for _, dev := range devices {
			dev.Runtime.SetFail("registry.example/web:3", "")
		}
		setImage(ctx, d, "registry.example/web:3", func(d *iotv1.Deployment) { d.Spec.Rollout.RevisionHistoryLimit = 1 })
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(3))
			g.Expect(condition(got, iotv1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.Aggregate.Succeeded).To(BeEquivalentTo(4))
		}).Should(Succeed())
		for i, dev := range devices {
			Expect(runningImage(dev, ns)).To(Equal("registry.example/web:3"), "device %d", i)
		}
		Eventually(func() []int64 { return revisionGenerations(ctx, d) }).Should(Equal([]int64{3}))
		// The record of the last rollback stays.
		Expect(get(ctx, d).Status.RolledBackTo.FailedGeneration).To(BeEquivalentTo(2))
	})

	It("control: with onFailure Pause (the default) the devices given the failed generation keep it", func(ctx SpecContext) {
		ns, devices, d, _ := failFirstBatch(ctx, "")
		Expect(get(ctx, d).Spec.Rollout.OnFailure).To(Equal(iotv1.RolloutFailurePause), "the default")
		Eventually(func(g Gomega) {
			c := condition(get(ctx, d), iotv1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(iotv1.ReasonTooManyFailures))
		}).Should(Succeed())
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "2s").Should(Equal(
			map[string]int64{ns + "-dev-0": 2, ns + "-dev-1": 2, ns + "-dev-2": 1, ns + "-dev-3": 1}))
		Expect(runningImage(devices[0], ns)).To(Equal("registry.example/web:2"))
		Expect(get(ctx, d).Status.RolledBackTo).To(BeNil())
	})

	It("goes on with a rollback after the operator's memory is dropped mid-way: the rollback and the score it returns to are read from the status and the ControllerRevision", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 3)
		for _, dev := range devices[1:] {
			dev.Runtime.SetFail("registry.example/web:2", "manifest unknown")
		}
		// One device per batch; half of a batch must run it, one failure is allowed: device 0 runs
		// generation 2, devices 1 and 2 fail it, and the second failure rolls back.
		d := batchedWeb(ctx, ns, 1, 1, 50, iotv1.RolloutFailureRollback, 3)
		Eventually(func() []int64 { return revisionGenerations(ctx, d) }).Should(Equal([]int64{1}))
		key := fleet.DeploymentKey{Namespace: ns, Name: "web"}

		By("device 0 slow to run generation 1 again, so the rollback's first batch (device 0) waits for it")
		// Held from before the rollout: the rollback may reach device 0 before this spec sees it run
		// generation 2, and a device taken offline only then could already have run generation 1.
		release := devices[0].Runtime.Hold("registry.example/web:1")
		DeferCleanup(release)
		setImage(ctx, d, "registry.example/web:2")
		Eventually(func() string { return runningImage(devices[0], ns) }).Should(Equal("registry.example/web:2"))
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(condition(got, iotv1.ConditionProgressing).Reason).To(Equal(iotv1.ReasonRollingBack))
			g.Expect(desiredGenerations(ctx, d)).To(Equal(map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 2, ns + "-dev-2": 2}))
		}).Should(Succeed())
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "1s").Should(Equal(
			map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 2, ns + "-dev-2": 2}))

		By("dropping everything the reconciler remembers of the Deployment, as an operator restart does")
		reconciler.plans.forget(key)
		reconciler.saved.forget(d.UID)
		reconciler.status.Forget(client.ObjectKeyFromObject(d))

		By("device 0 running generation 1 at last: the rollback goes on batch by batch to its end")
		release()
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(condition(got, iotv1.ConditionProgressing).Reason).To(Equal(iotv1.ReasonRolledBack))
			g.Expect(condition(got, iotv1.ConditionProgressing).Message).To(HavePrefix(
				"rolled back to generation 1: generation 2 failed (TooManyFailures), and the 3 devices that received it were given generation 1 again (3 run it"))
		}).Should(Succeed())
		for i, dev := range devices {
			Expect(runningImage(dev, ns)).To(Equal("registry.example/web:1"), "device %d", i)
		}
		Expect(reconciler.counters.Snapshot(key).ByGeneration[1]).To(Equal(fleet.PhaseCounts{Running: 3}))
		Expect(reconciler.counters.Snapshot(key).ByGeneration[2]).To(Equal(fleet.PhaseCounts{}))

		By("losing status.rolledBackTo as well as the memory: the desired states (rollbackOf) still say generation 2 was rolled back, and it is not published again")
		// No device fails generation 2 any more, so only the desired states can tell.
		Expect(k8s.Status().Patch(ctx, get(ctx, d), client.RawPatch(types.MergePatchType, []byte(`{"status":{"rolledBackTo":null}}`)))).To(Succeed())
		Expect(get(ctx, d).Status.RolledBackTo).To(BeNil())
		// The reconcile below must read the cleared status: a status change alone wakes no reconcile.
		Eventually(func(g Gomega) {
			var cached iotv1.Deployment
			g.Expect(reconciler.Client.Get(ctx, client.ObjectKeyFromObject(d), &cached)).To(Succeed())
			g.Expect(cached.Status.RolledBackTo).To(BeNil())
		}).Should(Succeed())
		reconciler.plans.forget(key)
		reconciler.status.Forget(client.ObjectKeyFromObject(d))
		reconciler.wakeUp(ctx, client.ObjectKeyFromObject(d))
		Eventually(func() *iotv1.RollbackStatus { return get(ctx, d).Status.RolledBackTo }).ShouldNot(BeNil())
		Expect(get(ctx, d).Status.RolledBackTo.Generation).To(BeEquivalentTo(1))
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "2s").Should(Equal(
			map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 1, ns + "-dev-2": 1}))
		Expect(condition(get(ctx, d), iotv1.ConditionProgressing).Reason).To(Equal(iotv1.ReasonRolledBack))
	})

	It("rolls an Immediate rollout back at once when its progress deadline passes", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 3)
		for _, dev := range devices[1:] {
			dev.Runtime.SetFail("registry.example/web:2", "manifest unknown")
		}
		d := fleettest.Deployment(ns, "web", ns, "registry.example/web:1")
		d.Spec.Rollout.OnFailure = iotv1.RolloutFailureRollback
		d.Spec.Rollout.ProgressDeadlineSeconds = 2
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(func() []int64 { return revisionGenerations(ctx, d) }).Should(Equal([]int64{1}))
		setImage(ctx, d, "registry.example/web:2")
		By("device 0 running generation 2 until the deadline passes, devices 1 and 2 failing it")
		Eventually(func() string { return runningImage(devices[0], ns) }).Should(Equal("registry.example/web:2"))
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			c := condition(got, iotv1.ConditionProgressing)
			g.Expect(c.Reason).To(Equal(iotv1.ReasonRolledBack))
			g.Expect(c.Message).To(HavePrefix("rolled back to generation 1: generation 2 failed (ProgressDeadlineExceeded), and the 3 devices that received it"))
			g.Expect(got.Status.RolledBackTo.Reason).To(Equal(iotv1.ReasonProgressDeadlineExceeded))
		}, "20s").Should(Succeed())
		for i, dev := range devices {
			Expect(runningImage(dev, ns)).To(Equal("registry.example/web:1"), "device %d", i)
		}
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "3s").Should(Equal(
			map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 1, ns + "-dev-2": 1}))
	})

	It("pauses with RollbackUnavailable when there is no previous successful score: its ControllerRevision deleted, or the first generation failed", func(ctx SpecContext) {
		ns, devices, d, _ := func() (string, []*fleettest.Device, *iotv1.Deployment, []int) {
			ns := newNamespace()
			devices := startDevices(ns, 4)
			for _, dev := range devices[1:] {
				dev.Runtime.SetFail("registry.example/web:2", "manifest unknown")
			}
			d := batchedWeb(ctx, ns, 2, 0, 100, iotv1.RolloutFailureRollback, 4)
			Eventually(func() []int64 { return revisionGenerations(ctx, d) }).Should(Equal([]int64{1}))
			By("deleting the ControllerRevision of generation 1")
			Expect(k8s.Delete(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: revisionName(d, 1)}})).To(Succeed())
			setImage(ctx, d, "registry.example/web:2")
			return ns, devices, d, nil
		}()
		Eventually(func(g Gomega) {
			c := condition(get(ctx, d), iotv1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(iotv1.ReasonRollbackUnavailable))
			g.Expect(c.Message).To(ContainSubstring("generation 2 failed and rollout.onFailure is Rollback, but no earlier generation completed its rollout"))
		}).Should(Succeed())
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "2s").Should(Equal(
			map[string]int64{ns + "-dev-0": 2, ns + "-dev-1": 2, ns + "-dev-2": 1, ns + "-dev-3": 1}))
		Expect(runningImage(devices[0], ns)).To(Equal("registry.example/web:2"))
		Expect(get(ctx, d).Status.RolledBackTo).To(BeNil())
		Expect(eventReasons(ctx, ns, "web")).To(ContainElement("Warning " + iotv1.ReasonRollbackUnavailable))

		By("a first generation that fails")
		first := fleettest.Deployment(ns, "first", ns, "registry.example/web:2")
		first.Spec.Rollout = iotv1.Rollout{Strategy: iotv1.RolloutBatched, OnFailure: iotv1.RolloutFailureRollback, Batched: &iotv1.BatchedRollout{
			BatchSize: intstr.FromInt32(2), SuccessThreshold: 100, MaxUnavailable: intstr.FromInt32(0)}}
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Eventually(func(g Gomega) {
			c := condition(get(ctx, first), iotv1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(iotv1.ReasonRollbackUnavailable))
			g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("generation %d failed", 1)))
		}).Should(Succeed())
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, first) }, "1s").Should(HaveLen(2))
	})

	It("refuses an unknown onFailure and a revisionHistoryLimit below 1 at admission, and defaults both", func(ctx SpecContext) {
		ns := newNamespace()
		bad := fleettest.Deployment(ns, "bad", ns, "registry.example/web:1")
		bad.Spec.Rollout.OnFailure = "Retry"
		Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring("spec.rollout.onFailure")))
		bad = fleettest.Deployment(ns, "bad", ns, "registry.example/web:1")
		bad.Spec.Rollout.RevisionHistoryLimit = -1
		Expect(k8s.Create(ctx, bad)).To(MatchError(ContainSubstring("spec.rollout.revisionHistoryLimit")))
		By("the control: the same Deployment without them, defaulted")
		ok := fleettest.Deployment(ns, "ok", ns, "registry.example/web:1")
		Expect(k8s.Create(ctx, ok)).To(Succeed())
		got := get(ctx, ok)
		Expect(got.Spec.Rollout.OnFailure).To(Equal(iotv1.RolloutFailurePause))
		Expect(got.Spec.Rollout.RevisionHistoryLimit).To(BeEquivalentTo(10))
	})

	It("never adopts a ControllerRevision of its name that it does not control, nor rolls back to its score", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 2)
		for _, dev := range devices {
			dev.Runtime.SetFail("registry.example/web:2", "manifest unknown")
		}
		planted := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-score-1", Labels: revisionLabels(&iotv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}})},
			Data:       runtime.RawExtension{Raw: []byte(`{"type":"PodmanV0","podmanV0":{"services":[{"name":"app","image":"evil.example/miner:1"}]}}`)},
			Revision:   1,
		}
		Expect(k8s.Create(ctx, planted)).To(Succeed())
		d := batchedWeb(ctx, ns, 1, 0, 100, iotv1.RolloutFailureRollback, 2)
		Eventually(func() []string { return eventReasons(ctx, ns, "web") }).Should(ContainElement("Warning " + iotv1.ReasonRollbackUnavailable))
		setImage(ctx, d, "registry.example/web:2")
		Eventually(func(g Gomega) {
			c := condition(get(ctx, d), iotv1.ConditionProgressing)
			g.Expect(c.Reason).To(Equal(iotv1.ReasonRollbackUnavailable))
		}).Should(Succeed())
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "1s").Should(Equal(map[string]int64{ns + "-dev-0": 2, ns + "-dev-1": 1}))
		for _, dev := range devices {
			Expect(runningImage(dev, ns)).NotTo(ContainSubstring("evil"))
		}
		live := &appsv1.ControllerRevision{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(planted), live)).To(Succeed())
		Expect(live.OwnerReferences).To(BeEmpty())
	})

	It("never rolls back a generation that completed its rollout: a device joining later and failing it holds the rollout as Pause does", func(ctx SpecContext) {
		ns := newNamespace()
		startDevices(ns, 2)
		d := batchedWeb(ctx, ns, 2, 0, 100, iotv1.RolloutFailureRollback, 2)
		setImage(ctx, d, "registry.example/web:2")
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(2))
			g.Expect(condition(got, iotv1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())
		Eventually(func() []int64 { return revisionGenerations(ctx, d) }).Should(ConsistOf(int64(1), int64(2)))

		By("a third device that cannot run generation 2 joining")
		late := &fleettest.FakeRuntime{}
		late.SetFail("registry.example/web:2", "manifest unknown")
		dev := fleettest.StartDevice(suiteCtx, fleetStore, ns+"-dev-9", map[string]string{"fleet": ns}, late)
		DeferCleanup(dev.Stop)
		Eventually(func() string { return condition(get(ctx, d), iotv1.ConditionProgressing).Reason }).Should(Equal(iotv1.ReasonTooManyFailures))
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "2s").Should(Equal(
			map[string]int64{ns + "-dev-0": 2, ns + "-dev-1": 2, ns + "-dev-9": 2}))
		Expect(get(ctx, d).Status.RolledBackTo).To(BeNil())
	})
})
