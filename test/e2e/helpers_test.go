//go:build linux

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

// newNamespace creates a namespace of its own for a spec.
func newNamespace(ctx context.Context, labels map[string]string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-", Labels: labels}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// ensureStorageClass makes a StorageClass backed by kube-controller-manager's hostPath provisioner.
func ensureStorageClass(ctx context.Context, name string) {
	GinkgoHelper()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/host-path",
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if err := k8s.Create(ctx, sc); !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}

// markCertificateReady plays cert-manager, which does not run here, once the operator has made the
// Certificate.
func markCertificateReady(ctx context.Context, ns, name string) {
	GinkgoHelper()
	Eventually(ctx, func() error { return ergotest.MarkCertificateReady(ctx, k8s, ns, name) }).Should(Succeed())
}

// getNetwork reads a network straight from the API server.
func getNetwork(ctx context.Context, ns, name string) (*ircv1.ErgoNetwork, error) {
	n := &ircv1.ErgoNetwork{}
	return n, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, n)
}

// converged passes when the network's status describes its current spec and Ready is True.
func converged(ctx context.Context, ns, name string) func(Gomega) {
	return func(g Gomega) {
		n, err := getNetwork(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n.Status.ObservedGeneration).To(Equal(n.Generation), "status.observedGeneration")
		cond := meta.FindStatusCondition(n.Status.Conditions, ircv1.ConditionReady)
		g.Expect(cond).NotTo(BeNil(), "no Ready condition yet")
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "Ready is %s: %s: %s", cond.Status, cond.Reason, cond.Message)
	}
}

// isReady tells whether a network's Ready condition is True for its current generation.
func isReady(n *ircv1.ErgoNetwork) bool {
	return n.Status.ObservedGeneration == n.Generation &&
		meta.IsStatusConditionTrue(n.Status.Conditions, ircv1.ConditionReady)
}

// deploymentAvailable is the Deployment controller's own verdict: the latest spec is rolled out and
// its pod is available.
func deploymentAvailable(g Gomega, d *appsv1.Deployment) {
	g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation), "deployment status.observedGeneration")
	g.Expect(d.Status.UpdatedReplicas).To(BeEquivalentTo(1), "updated replicas")
	g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(1), "available replicas")
	available := slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
		return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
	})
	g.Expect(available).To(BeTrue(), "Available condition: %+v", d.Status.Conditions)
}

// controlledBy asserts that obj's one controller reference is the network.
func controlledBy(g Gomega, obj client.Object, n *ircv1.ErgoNetwork) {
	ref := metav1.GetControllerOf(obj)
	g.Expect(ref).NotTo(BeNil(), "%T %s has no controller reference", obj, obj.GetName())
	g.Expect(ref.Kind).To(Equal("ErgoNetwork"))
	g.Expect(ref.Name).To(Equal(n.Name))
	g.Expect(ref.UID).To(Equal(n.UID))
	g.Expect(ptr.Deref(ref.BlockOwnerDeletion, false)).To(BeTrue(), "blockOwnerDeletion")
	g.Expect(obj.GetOwnerReferences()).To(HaveLen(1), "%T %s owner references", obj, obj.GetName())
}

// podsOf lists the pods of a network (by the instance label every child carries).
func podsOf(ctx context.Context, ns, name string) []corev1.Pod {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(k8s.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name})).To(Succeed())
	return pods.Items
}

// replicaSetsOf lists the ReplicaSets of a network's Deployment.
func replicaSetsOf(ctx context.Context, ns, name string) []appsv1.ReplicaSet {
	GinkgoHelper()
	var rss appsv1.ReplicaSetList
	Expect(k8s.List(ctx, &rss, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": name})).To(Succeed())
	return rss.Items
}

// warningRecorder collects the warnings the API server sends (deprecations, Pod Security warn mode).
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = nil
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.warnings)
}

// warningClient is a direct client that records every warning it is sent.
func warningClient() (client.Client, *warningRecorder) {
	GinkgoHelper()
	rec := &warningRecorder{}
	cfg := cluster.Config()
	cfg.WarningHandler = rec
	cfg.WarningHandlerWithContext = nil
	c, err := client.New(cfg, client.Options{Scheme: cluster.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c, rec
}

var _ rest.WarningHandler = (*warningRecorder)(nil)

// describe summarizes an object for failure messages.
func describe(obj client.Object) string {
	return fmt.Sprintf("%T %s/%s", obj, obj.GetNamespace(), obj.GetName())
}
