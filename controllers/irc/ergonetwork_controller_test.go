package irc

import (
	"context"
	"fmt"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	routev1 "github.com/openshift/api/route/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

// fullNetwork is ergotest's network with every child, as the reference's sample: TLS, two listeners, a
// route and an oper; no resources.
func fullNetwork(ns, name string) *ircv1.ErgoNetwork {
	n := ergotest.FullNetwork(ns, name, name+".irc.example.com")
	n.Spec.NetworkName = "TestNet"
	n.Spec.Resources = nil
	return n
}

// update changes a network, retrying when the operator's status write got there first.
func update(ctx context.Context, ns, name string, mutate func(*ircv1.ErgoNetwork)) {
	ExpectWithOffset(1, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &ircv1.ErgoNetwork{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, n); err != nil {
			return err
		}
		mutate(n)
		return k8s.Update(ctx, n)
	})).To(Succeed())
}

// reconcileUntilQuiet reconciles network name until a reconcile writes nothing: the cache has caught up
// with the operator's own writes.
func reconcileUntilQuiet(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		before := writes.In(ns)
		_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(writes.In(ns) - before).To(BeZero())
	}).Should(Succeed())
}

// managerIdle says whether the manager's ErgoNetwork controller has nothing queued and no reconcile
// running (its workqueue and worker gauges): a test that changes a child behind the operator's back waits
// for it, so that no reconcile still running from before reads the cache half before and half after.
func managerIdle() (bool, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return false, err
	}
	seen := 0
	for _, f := range families {
		label := map[string]string{"workqueue_depth": "name", "controller_runtime_active_workers": "controller"}[f.GetName()]
		if label == "" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == "ergonetwork" {
					seen++
					if m.GetGauge().GetValue() != 0 {
						return false, nil
					}
				}
			}
		}
	}
	return seen == 2, nil
}

func get[T client.Object](ctx context.Context, obj T, ns, name string) func() error {
	return func() error { return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj) }
}

func condition(n *ircv1.ErgoNetwork, t string) *metav1.Condition {
	return meta.FindStatusCondition(n.Status.Conditions, t)
}

// haveCondition matches a network whose condition t has the given status and reason.
func haveCondition(t string, status metav1.ConditionStatus, reason string) func(*ircv1.ErgoNetwork) error {
	return func(n *ircv1.ErgoNetwork) error {
		c := condition(n, t)
		if c == nil {
			return fmt.Errorf("no %s condition in %+v", t, n.Status.Conditions)
		}
		if c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s is %s/%s (%s), want %s/%s", t, c.Status, c.Reason, c.Message, status, reason)
		}
		return nil
	}
}

func eventuallyNetwork(ctx context.Context, ns, name string, check func(*ircv1.ErgoNetwork) error) *ircv1.ErgoNetwork {
	n := &ircv1.ErgoNetwork{}
	EventuallyWithOffset(1, func() error {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, n); err != nil {
			return err
		}
		return check(n)
	}).Should(Succeed())
	return n
}

// markDeploymentAvailable plays the Deployment controller, which envtest does not run.
func markDeploymentAvailable(ctx context.Context, ns, name string) {
	ExpectWithOffset(1, ergotest.MarkDeploymentAvailable(ctx, k8s, ns, name)).To(Succeed())
}

// markClaimBound plays the volume binder: Bound, or phase when given.
// readyFullNetwork creates fullNetwork name with its oper Secret (password pw) and plays the controllers
// envtest does not run (cert-manager, the Deployment controller, the volume binder) until it is Ready.
func readyFullNetwork(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, ergotest.OperSecret(ns, name+"-oper", "pw"))).To(Succeed())
	Expect(k8s.Create(ctx, fullNetwork(ns, name))).To(Succeed())
	Eventually(get(ctx, &appsv1.Deployment{}, ns, name)).Should(Succeed())
	markCertificateReady(ctx, ns, name)
	markDeploymentAvailable(ctx, ns, name)
	markClaimBound(ctx, ns, name+"-data")
	eventuallyNetwork(ctx, ns, name, haveCondition(ircv1.ConditionReady, metav1.ConditionTrue, ircv1.ReasonReady))
}

func markClaimBound(ctx context.Context, ns, name string, phase ...corev1.PersistentVolumeClaimPhase) {
	ExpectWithOffset(1, ergotest.MarkClaimBound(ctx, k8s, ns, name, phase...)).To(Succeed())
}

// markCertificateReady plays cert-manager.
func markCertificateReady(ctx context.Context, ns, name string) {
	ExpectWithOffset(1, ergotest.MarkCertificateReady(ctx, k8s, ns, name)).To(Succeed())
}

func templateDigest(ctx context.Context, ns, name string) string {
	d := &appsv1.Deployment{}
	ExpectWithOffset(1, get(ctx, d, ns, name)()).To(Succeed())
	return d.Spec.Template.Annotations[ergo.ConfigDigestAnnotation]
}

// warningEvents lists the reasons of Warning events about the network.
func warningEvents(ctx context.Context, ns, name string) func() []string {
	return func() []string {
		var list corev1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == name {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

var _ = Describe("ErgoNetwork reconciler", func() {
	var (
		ctx = context.Background()
		ns  string
	)
	BeforeEach(func() { ns = newNamespace() })

	It("makes every child with owner references and becomes Ready once the Deployment and Certificate are", func() {
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "net-oper", "s3cret"))).To(Succeed())
		n := fullNetwork(ns, "net")
		Expect(k8s.Create(ctx, n)).To(Succeed())

		children := map[string]client.Object{
			"net-data":   &corev1.PersistentVolumeClaim{},
			"net-config": &corev1.ConfigMap{},
			"net":        &appsv1.Deployment{},
		}
		for name, obj := range children {
			Eventually(get(ctx, obj, ns, name)).Should(Succeed(), name)
		}
		svc, cert, route := &corev1.Service{}, &cmv1.Certificate{}, &routev1.Route{}
		for _, obj := range []client.Object{svc, cert, route} {
			Eventually(get(ctx, obj, ns, "net")).Should(Succeed())
		}
		for _, obj := range append([]client.Object{svc, cert, route}, children["net-data"], children["net-config"], children["net"]) {
			Expect(metav1.IsControlledBy(obj, n)).To(BeTrue(), "%T %s has no controller reference", obj, obj.GetName())
			Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "platform-operator"))
		}

		By("the oper hash never leaving the Secret")
		cm := children["net-config"].(*corev1.ConfigMap)
		secret := &corev1.Secret{}
		Expect(get(ctx, secret, ns, "net-oper")()).To(Succeed())
		Expect(cm.Data[ergo.ConfigKey]).To(ContainSubstring("net.irc.example.com"))
		Expect(cm.Data[ergo.ConfigKey]).NotTo(ContainSubstring(string(secret.Data["password"])))
		d := children["net"].(*appsv1.Deployment)
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/ergo:test"))
		Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.Name", "net-oper")))
		Expect(route.Spec.TLS.Termination).To(Equal(routev1.TLSTerminationPassthrough))
		Expect(cert.Spec.SecretName).To(Equal("net-tls"))
		Expect(cert.Spec.DNSNames).To(Equal([]string{"net.irc.example.com"}))

		By("waiting on the Deployment and Certificate")
		got := eventuallyNetwork(ctx, ns, "net", haveCondition(ircv1.ConditionReady, metav1.ConditionFalse, ircv1.ReasonCertificatePending))
		Expect(condition(got, ircv1.ConditionReady).Message).To(ContainSubstring(ircv1.ConditionDeployment))
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(got.Status.NetworkName).To(Equal("TestNet"))
		Expect(got.Status.ServiceHost).To(Equal(fmt.Sprintf("net.%s.svc", ns)))
		Expect(got.Status.Ports).To(ConsistOf(
			ircv1.ListenerStatus{Name: "ircs-6697", Port: 6697, TLS: true},
			ircv1.ListenerStatus{Name: "irc-6667", Port: 6667}))
		Expect(got.Status.RouteHost).To(Equal("net.irc.example.com"))

		markCertificateReady(ctx, ns, "net")
		eventuallyNetwork(ctx, ns, "net", haveCondition(ircv1.ConditionReady, metav1.ConditionFalse, ircv1.ReasonDeploymentPending))
		markDeploymentAvailable(ctx, ns, "net")
		By("waiting on the claim until it is bound, and reporting it lost")
		got = eventuallyNetwork(ctx, ns, "net", haveCondition(ircv1.ConditionReady, metav1.ConditionFalse, ircv1.ReasonClaimPending))
		Expect(condition(got, ircv1.ConditionStorage).Message).To(ContainSubstring("net-data is Pending"))
		markClaimBound(ctx, ns, "net-data", corev1.ClaimLost)
		got = eventuallyNetwork(ctx, ns, "net", haveCondition(ircv1.ConditionStorage, metav1.ConditionFalse, ircv1.ReasonClaimLost))
		Expect(condition(got, ircv1.ConditionReady).Reason).To(Equal(ircv1.ReasonClaimLost))
		markClaimBound(ctx, ns, "net-data")
		got = eventuallyNetwork(ctx, ns, "net", haveCondition(ircv1.ConditionReady, metav1.ConditionTrue, ircv1.ReasonReady))
		for _, t := range partConditions {
			Expect(condition(got, t)).NotTo(BeNil(), t)
			Expect(condition(got, t).Status).To(Equal(metav1.ConditionTrue), t)
		}
	})

	It("creates a network with the least writes: one apply per child and one status write", func() {
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "lean-oper", "pw"))).To(Succeed())
		before := writes.In(ns)
		Expect(k8s.Create(ctx, fullNetwork(ns, "lean"))).To(Succeed())
		eventuallyNetwork(ctx, ns, "lean", func(n *ircv1.ErgoNetwork) error {
			if n.Status.ObservedGeneration != n.Generation {
				return fmt.Errorf("observedGeneration %d, generation %d", n.Status.ObservedGeneration, n.Generation)
			}
			return nil
		})
		Eventually(get(ctx, &routev1.Route{}, ns, "lean")).Should(Succeed())
		// The children's events wake the reconciler again while its cache may still hold the network
		// without its status: those reconciles must not write anything (docs/performance.md).
		Consistently(func() int { return writes.In(ns) - before }).WithTimeout(2*time.Second).
			Should(Equal(6+1), "PVC, Certificate, ConfigMap, Deployment, Service and Route, then the status")
		got := eventuallyNetwork(ctx, ns, "lean", haveCondition(ircv1.ConditionReady, metav1.ConditionFalse, ircv1.ReasonCertificatePending))
		for _, t := range []string{ircv1.ConditionCertificate, ircv1.ConditionDeployment, ircv1.ConditionRoute} {
			Expect(condition(got, t)).NotTo(BeNil(), "the first status write already reports %s", t)
		}
	})

	It("writes nothing when reconciling an unchanged network", func() {
		readyFullNetwork(ctx, ns, "quiet")

		versions := func() map[string]string {
			out := map[string]string{}
			for key, obj := range map[string]client.Object{
				"network": &ircv1.ErgoNetwork{}, "deployment": &appsv1.Deployment{}, "service": &corev1.Service{},
				"certificate": &cmv1.Certificate{}, "route": &routev1.Route{},
			} {
				Expect(get(ctx, obj, ns, "quiet")()).To(Succeed())
				out[key] = obj.GetResourceVersion()
			}
			for key, obj := range map[string]client.Object{"quiet-config": &corev1.ConfigMap{}, "quiet-data": &corev1.PersistentVolumeClaim{}} {
				Expect(get(ctx, obj, ns, key)()).To(Succeed())
				out[key] = obj.GetResourceVersion()
			}
			return out
		}
		// Let the cache catch up with our own status write before counting.
		reconcileUntilQuiet(ctx, ns, "quiet")

		Expect(writes.In(ns)).To(BeNumerically(">=", 7), "creating the network's children must have been counted here")
		rv := versions()
		before := writes.In(ns)
		for range 3 {
			_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "quiet"}})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(writes.In(ns)-before).To(BeZero(), "an unchanged network must cost no write")
		Expect(versions()).To(Equal(rv))
	})

	It("restores drifted and deleted children", func() {
		Expect(k8s.Create(ctx, fullNetwork(ns, "drift"))).To(Succeed())
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "drift-oper", "pw"))).To(Succeed())
		d := &appsv1.Deployment{}
		Eventually(get(ctx, d, ns, "drift")).Should(Succeed())

		d.Spec.Template.Spec.Containers[0].Image = "evil/image:latest"
		Expect(k8s.Update(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, d, ns, "drift")()).To(Succeed())
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/ergo:test"))
		}).Should(Succeed())

		cm := &corev1.ConfigMap{}
		Expect(get(ctx, cm, ns, "drift-config")()).To(Succeed())
		rendered := cm.Data[ergo.ConfigKey]
		Expect(k8s.Delete(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			fresh := &corev1.ConfigMap{}
			g.Expect(get(ctx, fresh, ns, "drift-config")()).To(Succeed())
			g.Expect(fresh.UID).NotTo(Equal(cm.UID))
			g.Expect(fresh.Data[ergo.ConfigKey]).To(Equal(rendered))
		}).Should(Succeed())

		svc := &corev1.Service{}
		Expect(get(ctx, svc, ns, "drift")()).To(Succeed())
		svc.Spec.Ports = svc.Spec.Ports[:1]
		Expect(k8s.Update(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, svc, ns, "drift")()).To(Succeed())
			g.Expect(svc.Spec.Ports).To(HaveLen(2))
		}).Should(Succeed())
	})

	It("reports a missing, incomplete or invalid oper Secret and rolls the pod when it is fixed or rotated", func() {
		Expect(k8s.Create(ctx, fullNetwork(ns, "op"))).To(Succeed())
		got := eventuallyNetwork(ctx, ns, "op", haveCondition(ircv1.ConditionOperCredentials, metav1.ConditionFalse, ircv1.ReasonSecretNotFound))
		Expect(condition(got, ircv1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		Expect(condition(got, ircv1.ConditionConfig).Reason).To(Equal(ircv1.ReasonWaiting))
		Eventually(warningEvents(ctx, ns, "op")).Should(ContainElement(ircv1.ReasonSecretNotFound))
		Expect(get(ctx, &appsv1.Deployment{}, ns, "op")()).To(Satisfy(apierrors.IsNotFound), "no Deployment without its oper")

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "op-oper"},
			Data: map[string][]byte{"other": []byte("x")}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		eventuallyNetwork(ctx, ns, "op", haveCondition(ircv1.ConditionOperCredentials, metav1.ConditionFalse, ircv1.ReasonSecretKeyMissing))

		secret.Data = map[string][]byte{"password": []byte("hunter2-not-a-hash")}
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		got = eventuallyNetwork(ctx, ns, "op", haveCondition(ircv1.ConditionOperCredentials, metav1.ConditionFalse, ircv1.ReasonInvalidHash))
		Expect(condition(got, ircv1.ConditionOperCredentials).Message).NotTo(ContainSubstring("hunter2"))
		Eventually(warningEvents(ctx, ns, "op")).Should(ContainElement(ircv1.ReasonInvalidHash))

		secret.Data = ergotest.OperSecret(ns, "op-oper", "first").Data
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		eventuallyNetwork(ctx, ns, "op", haveCondition(ircv1.ConditionOperCredentials, metav1.ConditionTrue, ircv1.ReasonReady))
		Eventually(get(ctx, &appsv1.Deployment{}, ns, "op")).Should(Succeed())
		first := templateDigest(ctx, ns, "op")
		Expect(first).NotTo(BeEmpty())

		By("rotating the hash")
		secret.Data = ergotest.OperSecret(ns, "op-oper", "second").Data
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		Eventually(func() string { return templateDigest(ctx, ns, "op") }).ShouldNot(Equal(first))

		By("breaking it again: the running Deployment is kept")
		rotated := templateDigest(ctx, ns, "op")
		Expect(k8s.Delete(ctx, secret)).To(Succeed())
		eventuallyNetwork(ctx, ns, "op", haveCondition(ircv1.ConditionOperCredentials, metav1.ConditionFalse, ircv1.ReasonSecretNotFound))
		Consistently(func() string { return templateDigest(ctx, ns, "op") }).Should(Equal(rotated))
		Expect(get(ctx, secret, ns, "op-oper")()).To(Satisfy(apierrors.IsNotFound))
	})

	It("never recreates or shrinks the claim, and grows it when the size is raised", func() {
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "pvc-oper", "pw"))).To(Succeed())
		// Kubernetes resizes only claims whose storage class allows expansion.
		class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "expandable-"},
			Provisioner: "example.com/csi", AllowVolumeExpansion: ptr.To(true)}
		Expect(k8s.Create(ctx, class)).To(Succeed())
		n := fullNetwork(ns, "pvc")
		n.Spec.Storage.StorageClassName = class.Name
		Expect(k8s.Create(ctx, n)).To(Succeed())
		pvc := &corev1.PersistentVolumeClaim{}
		Eventually(get(ctx, pvc, ns, "pvc-data")).Should(Succeed())
		uid, rv := pvc.UID, pvc.ResourceVersion
		Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))

		By("changing everything but storage")
		update(ctx, ns, "pvc", func(n *ircv1.ErgoNetwork) {
			n.Spec.Listeners = append(n.Spec.Listeners, ircv1.Listener{Address: ":7000"})
			n.Spec.NetworkName = "Renamed"
		})
		Eventually(func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(get(ctx, svc, ns, "pvc")()).To(Succeed())
			g.Expect(svc.Spec.Ports).To(HaveLen(3))
		}).Should(Succeed())
		eventuallyNetwork(ctx, ns, "pvc", func(n *ircv1.ErgoNetwork) error {
			if n.Status.ObservedGeneration != n.Generation {
				return fmt.Errorf("observedGeneration %d, generation %d", n.Status.ObservedGeneration, n.Generation)
			}
			return nil
		})
		Expect(get(ctx, pvc, ns, "pvc-data")()).To(Succeed())
		Expect(pvc.UID).To(Equal(uid))
		Expect(pvc.ResourceVersion).To(Equal(rv), "the claim must not be written when storage did not change")

		By("growing once the claim is bound")
		update(ctx, ns, "pvc", func(n *ircv1.ErgoNetwork) {
			n.Spec.Storage.Size = ptr.To(resource.MustParse("5Gi"))
		})
		got := eventuallyNetwork(ctx, ns, "pvc", func(n *ircv1.ErgoNetwork) error {
			if c := condition(n, ircv1.ConditionStorage); c == nil || c.ObservedGeneration != n.Generation {
				return fmt.Errorf("storage condition not current")
			}
			return nil
		})
		Expect(condition(got, ircv1.ConditionStorage).Message).To(ContainSubstring("once the claim is bound"))
		Expect(condition(got, ircv1.ConditionStorage).Reason).To(Equal(ircv1.ReasonClaimPending))
		Expect(get(ctx, pvc, ns, "pvc-data")()).To(Succeed())
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
		// Play the volume binder, which envtest does not run.
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		Expect(k8s.Status().Update(ctx, pvc)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, pvc, ns, "pvc-data")()).To(Succeed())
			g.Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("5Gi"))
		}).Should(Succeed())

		By("shrinking is refused with a warning")
		update(ctx, ns, "pvc", func(n *ircv1.ErgoNetwork) {
			n.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi"))
		})
		Eventually(warningEvents(ctx, ns, "pvc")).Should(ContainElement(ircv1.ReasonStorageShrink))
		got = eventuallyNetwork(ctx, ns, "pvc", func(n *ircv1.ErgoNetwork) error {
			if c := condition(n, ircv1.ConditionStorage); c == nil || c.ObservedGeneration != n.Generation {
				return fmt.Errorf("storage condition not current")
			}
			return nil
		})
		Expect(condition(got, ircv1.ConditionStorage).Message).To(ContainSubstring("cannot shrink"))
		Expect(get(ctx, pvc, ns, "pvc-data")()).To(Succeed())
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("5Gi"))
		Expect(pvc.UID).To(Equal(uid))
	})

	It("rolls the pod on a config change only", func() {
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "roll-oper", "pw"))).To(Succeed())
		n := fullNetwork(ns, "roll")
		Expect(k8s.Create(ctx, n)).To(Succeed())
		Eventually(get(ctx, &appsv1.Deployment{}, ns, "roll")).Should(Succeed())
		first := templateDigest(ctx, ns, "roll")

		By("a resources change keeps the digest")
		update(ctx, ns, "roll", func(n *ircv1.ErgoNetwork) {
			n.Spec.Resources = &ircv1.ResourceRequirements{Requests: map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("50m")}}
		})
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(get(ctx, d, ns, "roll")()).To(Succeed())
			g.Expect(d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("50m"))
		}).Should(Succeed())
		Expect(templateDigest(ctx, ns, "roll")).To(Equal(first))

		By("a network rename changes it")
		update(ctx, ns, "roll", func(n *ircv1.ErgoNetwork) {
			n.Spec.NetworkName = "Other"
		})
		Eventually(func() string { return templateDigest(ctx, ns, "roll") }).ShouldNot(Equal(first))

		By("cert-manager issuing, then renewing, the certificate changes it: ergo reads it only at start")
		renamed := templateDigest(ctx, ns, "roll")
		tlsSecret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "roll-tls", Labels: ergo.Labels(n)},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: []byte("cert-1"), corev1.TLSPrivateKeyKey: []byte("key-1")},
		}
		Expect(k8s.Create(ctx, tlsSecret)).To(Succeed())
		Eventually(func() string { return templateDigest(ctx, ns, "roll") }).ShouldNot(Equal(renamed))
		issued := templateDigest(ctx, ns, "roll")
		tlsSecret.Data[corev1.TLSCertKey] = []byte("cert-2")
		Expect(k8s.Update(ctx, tlsSecret)).To(Succeed())
		Eventually(func() string { return templateDigest(ctx, ns, "roll") }).ShouldNot(Equal(issued))
	})

	It("deletes the Route and Certificate when the spec drops them", func() {
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "drop-oper", "pw"))).To(Succeed())
		n := fullNetwork(ns, "drop")
		Expect(k8s.Create(ctx, n)).To(Succeed())
		Eventually(get(ctx, &routev1.Route{}, ns, "drop")).Should(Succeed())
		Eventually(get(ctx, &cmv1.Certificate{}, ns, "drop")).Should(Succeed())

		update(ctx, ns, "drop", func(n *ircv1.ErgoNetwork) {
			n.Spec.Route, n.Spec.TLS = nil, nil
			n.Spec.Listeners = []ircv1.Listener{{Address: ":6667"}}
		})
		Eventually(get(ctx, &routev1.Route{}, ns, "drop")).Should(Satisfy(apierrors.IsNotFound))
		Eventually(get(ctx, &cmv1.Certificate{}, ns, "drop")).Should(Satisfy(apierrors.IsNotFound))
		got := eventuallyNetwork(ctx, ns, "drop", func(n *ircv1.ErgoNetwork) error {
			if n.Status.ObservedGeneration != n.Generation {
				return fmt.Errorf("not observed yet")
			}
			return nil
		})
		Expect(condition(got, ircv1.ConditionRoute)).To(BeNil())
		Expect(condition(got, ircv1.ConditionCertificate)).To(BeNil())
		Expect(got.Status.RouteHost).To(BeEmpty())
	})

	It("reports a child the API server refuses without a hot loop", func() {
		// Admission refuses every spec the API server would refuse on a child, so the cluster's own
		// policy plays the refusal here: a ValidatingAdmissionPolicy that denies this Deployment.
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-deny-bad"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
					}}},
				},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'bad'", Message: "no Deployment named bad here"}},
			},
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() {
			Expect(k8s.Delete(context.Background(), binding)).To(Succeed())
			Expect(k8s.Delete(context.Background(), policy)).To(Succeed())
		})
		Eventually(func() error {
			d := ergo.Deployment(ergotest.MinimalNetwork(ns, "bad"), ergo.Options{}, "x")
			d.OwnerReferences = nil // the only reason left to refuse it is the policy
			return k8s.Create(ctx, d, client.DryRunAll)
		}).Should(MatchError(ContainSubstring("no Deployment named bad here")), "the policy takes effect")

		n := fullNetwork(ns, "bad")
		n.Spec.OperCredentials = nil
		Expect(k8s.Create(ctx, n)).To(Succeed())
		got := eventuallyNetwork(ctx, ns, "bad", haveCondition(ircv1.ConditionDeployment, metav1.ConditionFalse, ircv1.ReasonApplyFailed))
		Expect(condition(got, ircv1.ConditionDeployment).Message).To(ContainSubstring("Deployment bad"))
		Expect(condition(got, ircv1.ConditionDeployment).Message).To(ContainSubstring("no Deployment named bad here"))
		Eventually(warningEvents(ctx, ns, "bad")).Should(ContainElement(ircv1.ReasonApplyFailed))
	})

})
