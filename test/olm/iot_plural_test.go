//go:build linux

package olm

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// The iot plural change (docs/iot.md, "Upgrading: the plural changed"): the CRD iotdeployments.iot.nationtech.io
// became deployments.iot.nationtech.io, of the same kind, which the API server refuses beside the old one.
// The suite's previous release predates the iot API, so the test installs the CRD of the release before the
// change by hand (api/iot/v1alpha1/testdata), with Deployments, as a cluster that ran it would have them;
// before the upgrade it performs the documented step (export, remove the finalizers, delete the old CRD),
// and after it re-creates the objects under the CRD OLM installed and checks they are as they were.
const (
	// iotUpgradeNamespace holds those Deployments. It is outside the OperatorGroup's target namespace, to
	// which OLM scopes the webhooks: the webhook Service OLM makes is not routable on this local cluster.
	// Nothing reconciles them here; the test is about the objects surviving the CRD change.
	iotUpgradeNamespace = "iot-upgrade"
	oldIoTCRD           = "iotdeployments.iot.nationtech.io"
	newIoTCRD           = "deployments.iot.nationtech.io"
)

var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	oldIoTGVR = iotv1.GroupVersion.WithResource("iotdeployments")
	newIoTGVR = iotv1.GroupVersion.WithResource("deployments")
)

func dynamicClient() dynamic.Interface {
	GinkgoHelper()
	d, err := dynamic.NewForConfig(cluster.Config())
	Expect(err).NotTo(HaveOccurred())
	return d
}

// crdStatus is the status of condition typ of CRD name, "" while it has none or the CRD is missing.
func crdStatus(ctx context.Context, name, typ string) string {
	u, err := dynamicClient().Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// installPreviousIoT installs the CRD of the release before the plural change and two Deployments with
// that release's finalizer, and returns them as stored.
func installPreviousIoT(ctx context.Context) []unstructured.Unstructured {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "api", "iot", "v1alpha1", "testdata", "iotdeployments-crd-before-plural.yaml"))
	Expect(err).NotTo(HaveOccurred())
	crd := &unstructured.Unstructured{}
	Expect(yaml.Unmarshal(b, &crd.Object)).To(Succeed())
	Expect(crd.GetName()).To(Equal(oldIoTCRD))
	dyn := dynamicClient()
	_, err = dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(ctx, func() string { return crdStatus(ctx, oldIoTCRD, "Established") }).Should(Equal("True"))
	createNamespace(ctx, iotUpgradeNamespace)
	var out []unstructured.Unstructured
	for _, name := range []string{"web", "sensors"} {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": iotv1.GroupVersion.String(), "kind": "Deployment",
			"metadata": map[string]any{"name": name, "finalizers": []any{"iot.nationtech.io/desired-state"}},
			"spec": map[string]any{
				"targetSelector": map[string]any{"matchLabels": map[string]any{"site": name}},
				"score": map[string]any{"type": "PodmanV0", "podmanV0": map[string]any{"services": []any{
					map[string]any{"name": "app", "image": "registry.example/" + name + ":1"},
				}}},
			},
		}}
		Eventually(ctx, func() error {
			got, err := dyn.Resource(oldIoTGVR).Namespace(iotUpgradeNamespace).Create(ctx, u, metav1.CreateOptions{})
			if err == nil {
				out = append(out, *got)
			}
			return err
		}).Should(Succeed(), "the old CRD's resource is not served")
	}
	return out
}

// exportAndDeleteOldIoT is the documented step before the upgrade: export the Deployments, remove their
// finalizers (the operator that would purge NATS for them is stopped, and must not: devices keep running),
// delete the old CRD.
func exportAndDeleteOldIoT(ctx context.Context) []unstructured.Unstructured {
	GinkgoHelper()
	dyn := dynamicClient()
	list, err := dyn.Resource(oldIoTGVR).Namespace("").List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	exported := list.DeepCopy().Items
	for _, u := range list.Items {
		_, err := dyn.Resource(oldIoTGVR).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(dyn.Resource(crdGVR).Delete(ctx, oldIoTCRD, metav1.DeleteOptions{})).To(Succeed())
	Eventually(ctx, func() bool {
		_, err := dyn.Resource(crdGVR).Get(ctx, oldIoTCRD, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue(), "the old CRD is never gone")
	return exported
}

// recreateIoT re-creates the exported Deployments under the new CRD and checks each against what was stored
// before the upgrade.
func recreateIoT(ctx context.Context, exported, before []unstructured.Unstructured) {
	GinkgoHelper()
	Eventually(ctx, func() string { return crdStatus(ctx, newIoTCRD, "NamesAccepted") }).Should(Equal("True"))
	Eventually(ctx, func() string { return crdStatus(ctx, newIoTCRD, "Established") }).Should(Equal("True"))
	dyn := dynamicClient()
	for i := range exported {
		u := exported[i].DeepCopy()
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "finalizers"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(u.Object, "status")
		Eventually(ctx, func() error {
			_, err := dyn.Resource(newIoTGVR).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
			return err
		}).Should(Succeed(), "re-create %s", u.GetName())
	}
	Expect(before).To(HaveLen(len(exported)))
	for _, b := range before {
		got := &iotv1.Deployment{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: b.GetNamespace(), Name: b.GetName()}, got)).To(Succeed())
		spec, _, _ := unstructured.NestedMap(b.Object, "spec")
		want := &iotv1.Deployment{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"spec": spec}, want)).To(Succeed())
		// This release's schema defaults the rollout's onFailure and revisionHistoryLimit, which the
		// previous release's did not have: the API server fills them in on re-creation.
		if want.Spec.Rollout.OnFailure == "" {
			want.Spec.Rollout.OnFailure = iotv1.RolloutFailurePause
		}
		if want.Spec.Rollout.RevisionHistoryLimit == 0 {
			want.Spec.Rollout.RevisionHistoryLimit = 10
		}
		Expect(got.Spec).To(Equal(want.Spec), "%s after the upgrade", b.GetName())
	}
}
