package iot

import (
	"context"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

func get(ctx context.Context, d *iotv1.Deployment) *iotv1.Deployment {
	out := &iotv1.Deployment{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), out)).To(Succeed())
	return out
}

func condition(d *iotv1.Deployment, t string) *metav1.Condition {
	return meta.FindStatusCondition(d.Status.Conditions, t)
}

// desiredGenerations is each device's desired generation for d, read from NATS.
func desiredGenerations(ctx context.Context, d *iotv1.Deployment) map[string]int64 {
	out := map[string]int64{}
	Expect(fleetStore.EachDesired(ctx, fleet.DeploymentKey{Namespace: d.Namespace, Name: d.Name},
		func(device string, des *fleet.Desired) { out[device] = des.Generation })).To(Succeed())
	return out
}

func stopAll(devices []*fleettest.Device) {
	for _, d := range devices {
		d.Stop()
	}
}

// startDevices starts n devices labelled for ns's Deployments (named ns-dev-<i>), stopped when the spec
// ends.
func startDevices(ns string, n int) []*fleettest.Device {
	devices := fleettest.StartFleet(suiteCtx, fleetStore, ns+"-dev", ns, n)
	DeferCleanup(stopAll, devices)
	return devices
}

// createWeb creates iot Deployment "web" of registry.example/web:1 for ns's devices.
func createWeb(ctx context.Context, ns string) *iotv1.Deployment {
	GinkgoHelper()
	d := fleettest.Deployment(ns, "web", ns, "registry.example/web:1")
	Expect(k8s.Create(ctx, d)).To(Succeed())
	return d
}

var _ = Describe("iot Deployment", func() {
	It("reaches Ready across the devices it selects, publishes to no other, and writes nothing when reconciled again", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 3)
		other := fleettest.StartFleet(suiteCtx, fleetStore, ns+"-other", ns+"-x", 1)
		DeferCleanup(stopAll, other)

		d := createWeb(ctx, ns)
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(condition(got, iotv1.ConditionReady)).NotTo(BeNil())
			g.Expect(condition(got, iotv1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Aggregate).To(Equal(iotv1.Aggregate{MatchedDevices: 3, Succeeded: 3, Updated: 3}))
			g.Expect(got.Status.PublishedDevices).To(BeEquivalentTo(3))
		}).Should(Succeed())
		got := get(ctx, d)
		Expect(condition(got, iotv1.ConditionProgressing).Reason).To(Equal(iotv1.ReasonRolloutComplete))
		Expect(condition(got, iotv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
		Expect(condition(got, iotv1.ConditionPaused).Status).To(Equal(metav1.ConditionFalse))
		Expect(got.Finalizers).To(ContainElement(Finalizer))
		Expect(desiredGenerations(ctx, d)).To(Equal(map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 1, ns + "-dev-2": 1}))
		for _, dev := range devices {
			score, ok := dev.Runtime.Running(fleet.DeploymentKey{Namespace: ns, Name: "web"})
			Expect(ok).To(BeTrue())
			Expect(score.PodmanV0.Services[0].Image).To(Equal("registry.example/web:1"))
		}

		By("reconciling the unchanged Deployment again")
		before, rv := writes.In(ns), got.ResourceVersion
		n := reconciler.reconciles.Load()
		reconciler.wakeUp(ctx, types.NamespacedName{Namespace: ns, Name: "web"})
		Eventually(reconciler.reconciles.Load).Should(BeNumerically(">", n))
		Expect(writes.In(ns)).To(Equal(before), "writes on an unchanged re-reconcile")
		Expect(get(ctx, d).ResourceVersion).To(Equal(rv))
	})

	It("rolls an image change out batch by batch and stops at a failing device, which shows in lastError", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 3)
		devices[1].Runtime.SetFail("registry.example/web:2", "manifest unknown")

		d := fleettest.Deployment(ns, "web", ns, "registry.example/web:1")
		d.Spec.Rollout = iotv1.Rollout{Strategy: iotv1.RolloutBatched, Batched: &iotv1.BatchedRollout{
			BatchSize: intstr.FromInt32(1), SuccessThreshold: 100, MaxUnavailable: intstr.FromInt32(0)}}
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.Aggregate.Succeeded).To(BeEquivalentTo(3))
			g.Expect(condition(got, iotv1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		}).Should(Succeed())

		By("changing the image")
		got := get(ctx, d)
		got.Spec.Score.PodmanV0.Services[0].Image = "registry.example/web:2"
		Expect(k8s.Update(ctx, got)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(2))
			c := condition(got, iotv1.ConditionProgressing)
			g.Expect(c.Reason).To(Equal(iotv1.ReasonTooManyFailures))
			g.Expect(got.Status.Aggregate.Failed).To(BeEquivalentTo(1))
			g.Expect(got.Status.Aggregate.Succeeded).To(BeEquivalentTo(1))
			g.Expect(got.Status.Aggregate.LastError).NotTo(BeNil())
			g.Expect(got.Status.Aggregate.LastError.Device).To(Equal(ns + "-dev-1"))
			g.Expect(got.Status.Aggregate.LastError.Message).To(ContainSubstring("manifest unknown"))
			g.Expect(condition(got, iotv1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		}).Should(Succeed())
		// The first batch (dev-0) ran it, the second (dev-1) failed, the third was never given it.
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }).Should(Equal(
			map[string]int64{ns + "-dev-0": 2, ns + "-dev-1": 2, ns + "-dev-2": 1}))
		score, _ := devices[2].Runtime.Running(fleet.DeploymentKey{Namespace: ns, Name: "web"})
		Expect(score.PodmanV0.Services[0].Image).To(Equal("registry.example/web:1"))
		Expect(get(ctx, d).Status.RecentEvents).NotTo(BeEmpty())
	})

	It("counts a device that stops sending heartbeats as stale until it sends one again, and withdraws a device whose labels stop matching", func(ctx SpecContext) {
		ns := newNamespace()
		devices := fleettest.StartFleet(suiteCtx, fleetStore, ns+"-dev", ns, 3)
		DeferCleanup(stopAll, devices[1:])
		d := createWeb(ctx, ns)
		Eventually(func() int32 { return get(ctx, d).Status.Aggregate.Succeeded }).Should(BeEquivalentTo(3))

		devices[0].Stop()
		Eventually(func() int32 { return get(ctx, d).Status.Aggregate.Stale }).Should(BeEquivalentTo(1))

		By("the quiet device coming back")
		devices[0].Start(suiteCtx)
		DeferCleanup(devices[0].Stop)
		Eventually(func() int32 { return get(ctx, d).Status.Aggregate.Stale }).Should(BeEquivalentTo(0))

		By("relabelling a device out of the selection")
		info := devices[2].Info
		info.Labels = map[string]string{"fleet": "elsewhere"}
		Expect(fleetStore.RegisterDevice(ctx, info)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(got.Status.Aggregate.MatchedDevices).To(BeEquivalentTo(2))
			g.Expect(got.Status.Aggregate.Succeeded).To(BeEquivalentTo(2))
		}).Should(Succeed())
		Expect(desiredGenerations(ctx, d)).NotTo(HaveKey(info.ID))
		Eventually(func() bool {
			_, ok := devices[2].Runtime.Running(fleet.DeploymentKey{Namespace: ns, Name: "web"})
			return ok
		}).Should(BeFalse())
	})

	It("removes its desired state from every device when deleted", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 3)
		d := createWeb(ctx, ns)
		Eventually(func() int32 { return get(ctx, d).Status.Aggregate.Succeeded }).Should(BeEquivalentTo(3))

		Expect(k8s.Delete(ctx, d)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(d), &iotv1.Deployment{}))
		}).Should(BeTrue())
		Expect(desiredGenerations(ctx, d)).To(BeEmpty())
		for _, dev := range devices {
			Eventually(func() bool { _, ok := dev.Runtime.Running(fleet.DeploymentKey{Namespace: ns, Name: "web"}); return ok }).Should(BeFalse())
		}
	})

	It("publishes again the desired state lost from the bucket once its memory of the last pass is gone, as at an operator start (docs/backup.md: what needs no backup)", func(ctx SpecContext) {
		ns := newNamespace()
		devices := startDevices(ns, 3)
		d := createWeb(ctx, ns)
		Eventually(func() int32 { return get(ctx, d).Status.Aggregate.Succeeded }).Should(BeEquivalentTo(3))
		key := fleet.DeploymentKey{Namespace: ns, Name: "web"}
		want := map[string]int64{ns + "-dev-0": 1, ns + "-dev-1": 1, ns + "-dev-2": 1}
		Expect(desiredGenerations(ctx, d)).To(Equal(want))

		By("losing the Deployment's desired states from the bucket (its subjects purged from the stream, no marker left, as after a lost NATS volume)")
		js, err := jetstream.New(fleetStore.Conn())
		Expect(err).NotTo(HaveOccurred())
		stream, err := js.Stream(ctx, "KV_"+fleet.BucketDesired)
		Expect(err).NotTo(HaveOccurred())
		Expect(stream.Purge(ctx, jetstream.WithPurgeSubject("$KV."+fleet.BucketDesired+"."+fleet.DesiredDeploymentFilter(key)))).To(Succeed())
		Expect(desiredGenerations(ctx, d)).To(BeEmpty())

		By("a reconcile that still remembers its last pass publishes nothing (the control: the pass, not any reconcile, restores it)")
		r := reconciler.reconciles.Load()
		reconciler.wakeUp(ctx, types.NamespacedName{Namespace: ns, Name: "web"})
		Eventually(reconciler.reconciles.Load).Should(BeNumerically(">", r))
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }, "1s", "100ms").Should(BeEmpty())

		By("forgetting the last pass, as a restarted operator has never made one")
		reconciler.plans.forget(key)
		reconciler.wakeUp(ctx, types.NamespacedName{Namespace: ns, Name: "web"})
		Eventually(func() map[string]int64 { return desiredGenerations(ctx, d) }).Should(Equal(want))
		for _, dev := range devices {
			Eventually(func() bool { _, ok := dev.Runtime.Running(key); return ok }).Should(BeTrue())
		}
	})

	It("holds a paused rollout", func(ctx SpecContext) {
		ns := newNamespace()
		startDevices(ns, 2)
		d := fleettest.Deployment(ns, "web", ns, "registry.example/web:1")
		d.Spec.Paused = true
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			g.Expect(condition(got, iotv1.ConditionPaused)).NotTo(BeNil())
			g.Expect(condition(got, iotv1.ConditionPaused).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(condition(got, iotv1.ConditionReady).Reason).To(Equal(iotv1.ReasonPaused))
			g.Expect(got.Status.Aggregate.MatchedDevices).To(BeEquivalentTo(2))
		}).Should(Succeed())
		Expect(desiredGenerations(ctx, d)).To(BeEmpty())
	})

	DescribeTable("admission refuses", func(ctx SpecContext, mutate func(*iotv1.Deployment), message string) {
		d := fleettest.Deployment(newNamespace(), "web", "x", "registry.example/web:1")
		mutate(d)
		err := k8s.Create(ctx, d)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(message))
	},
		Entry("a name with a dot", func(d *iotv1.Deployment) { d.Name = "web.v1" }, "must not contain dots"),
		Entry("a Batched rollout without batches", func(d *iotv1.Deployment) { d.Spec.Rollout.Strategy = iotv1.RolloutBatched }, "rollout.batched is required"),
		Entry("a batch size of 0%", func(d *iotv1.Deployment) {
			d.Spec.Rollout = iotv1.Rollout{Strategy: iotv1.RolloutBatched, Batched: &iotv1.BatchedRollout{BatchSize: intstr.FromString("0%")}}
		}, "batchSize must be"),
		Entry("a PodmanV0 score without its payload", func(d *iotv1.Deployment) { d.Spec.Score.PodmanV0 = nil }, "score.podmanV0 is required"),
		Entry("two services of one name", func(d *iotv1.Deployment) {
			s := d.Spec.Score.PodmanV0
			s.Services = append(s.Services, s.Services[0])
		}, "service names must be unique"),
		Entry("an image with whitespace", func(d *iotv1.Deployment) { d.Spec.Score.PodmanV0.Services[0].Image = "a b" }, "whitespace"),
	)
})

var _ = Describe("the iot Deployment sample", func() {
	It("is admitted as it stands", func(ctx SpecContext) {
		data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "iot_v1alpha1_deployment.yaml"))
		Expect(err).NotTo(HaveOccurred())
		d := &iotv1.Deployment{}
		Expect(yaml.UnmarshalStrict(data, d)).To(Succeed())
		d.Namespace = newNamespace()
		Expect(k8s.Create(ctx, d)).To(Succeed())
	})
})
