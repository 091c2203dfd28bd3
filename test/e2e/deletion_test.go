//go:build linux

package e2e

import (
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	routev1 "github.com/openshift/api/route/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

var _ = Describe("ErgoNetwork", func() {
	It("deletion: deleting the network removes every child through the garbage collector and leaves the user's Secret", func(ctx SpecContext) {
		ns := newNamespace(ctx, nil)
		startOperator("deletion", operatorConfig{namespace: ns})
		secret := ergotest.OperSecret(ns, "doomed-oper", "hunter2")
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		n := ergotest.FullNetwork(ns, "doomed", "doomed.irc.test")
		Expect(k8s.Create(ctx, n)).To(Succeed())

		By("waiting for every child, the pod and the bound volume")
		key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
		dep, pvc := &appsv1.Deployment{}, &corev1.PersistentVolumeClaim{}
		all := []struct {
			name string
			obj  client.Object
		}{
			{"doomed-config", &corev1.ConfigMap{}}, {"doomed-data", pvc}, {"doomed", dep},
			{"doomed", &corev1.Service{}}, {"doomed", &cmv1.Certificate{}}, {"doomed", &routev1.Route{}},
		}
		var pvName string
		Eventually(ctx, func(g Gomega) {
			for _, c := range all {
				g.Expect(k8s.Get(ctx, key(c.name), c.obj)).To(Succeed(), describe(c.obj))
				controlledBy(g, c.obj, n)
			}
			deploymentAvailable(g, dep)
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
			pvName = pvc.Spec.VolumeName
		}).WithTimeout(90 * time.Second).Should(Succeed())
		Expect(replicaSetsOf(ctx, ns, "doomed")).To(HaveLen(1))
		Expect(podsOf(ctx, ns, "doomed")).To(HaveLen(1))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		secretVersion := secret.ResourceVersion

		By("deleting the ErgoNetwork (background propagation, as kubectl delete does)")
		Expect(k8s.Delete(ctx, n, client.PropagationPolicy("Background"))).To(Succeed())

		gone := func(g Gomega) {
			for _, c := range all {
				err := k8s.Get(ctx, key(c.name), c.obj)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s still exists (get: %v)", describe(c.obj), err)
			}
			g.Expect(replicaSetsOf(ctx, ns, "doomed")).To(BeEmpty(), "ReplicaSets")
			g.Expect(podsOf(ctx, ns, "doomed")).To(BeEmpty(), "pods")
			err := k8s.Get(ctx, types.NamespacedName{Name: pvName}, &corev1.PersistentVolume{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "volume %s (reclaim policy Delete) still exists (get: %v)", pvName, err)
		}
		Eventually(ctx, gone).WithTimeout(2 * time.Minute).Should(Succeed())
		By("nothing comes back: the operator does not recreate children of a deleted network")
		Consistently(ctx, gone).Should(Succeed())

		By("the user's Secret is untouched")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		Expect(secret.DeletionTimestamp).To(BeNil())
		Expect(secret.OwnerReferences).To(BeEmpty())
		Expect(secret.ResourceVersion).To(Equal(secretVersion))
	})
})
