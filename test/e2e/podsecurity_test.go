//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
)

// restricted are the Pod Security labels of a namespace that enforces the restricted standard, and also
// warns and audits against it: warn is what makes the API server send a warning for a workload whose pod
// template would not pass.
var restricted = map[string]string{
	"pod-security.kubernetes.io/enforce": "restricted",
	"pod-security.kubernetes.io/warn":    "restricted",
	"pod-security.kubernetes.io/audit":   "restricted",
}

var _ = Describe("Pod Security", func() {
	It("pod security: config/default and the ergo pods are admitted under enforce=restricted with no warnings", func(ctx SpecContext) {
		wc, warnings := warningClient()

		By("rendering config/default with kustomize")
		objs := renderKustomization(ctx, filepath.Join(repoRoot, "config", "default"))
		var nsName string
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				nsName = o.GetName()
				Expect(o.GetLabels()).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"),
					"config/default's namespace must enforce the restricted standard itself")
				labels := o.GetLabels()
				for k, v := range restricted {
					labels[k] = v
				}
				o.SetLabels(labels)
			}
		}
		Expect(nsName).NotTo(BeEmpty(), "config/default has no Namespace")

		By("applying every object server-side, as `make deploy` does")
		slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return applyOrder(a) - applyOrder(b) })
		for _, o := range objs {
			Expect(wc.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("e2e"), client.ForceOwnership)).
				To(Succeed(), "apply %s %s", o.GetKind(), o.GetName())
		}
		DeferCleanup(func() {
			ctx, cancel := suiteContext()
			defer cancel()
			for _, o := range objs {
				if o.GetKind() == "CustomResourceDefinition" { // the suite's own CRDs: they stay
					continue
				}
				if err := k8s.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
					Expect(err).NotTo(HaveOccurred())
				}
			}
			// config/default's namespace is the one the cluster-wide operators of the other scenarios are
			// installed into (clusterOperatorNamespace): the next scenario must not find it terminating.
			Eventually(ctx, func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: nsName}, &corev1.Namespace{}))
			}).WithTimeout(2*time.Minute).Should(BeTrue(), "namespace %s is still there after its deletion", nsName)
		})
		Expect(warnings.all()).To(BeEmpty(), "warnings while applying config/default")

		By("the operator's pod is admitted and runs (kwok), with no failed pod creation")
		var dep *appsv1.Deployment
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				dep = &appsv1.Deployment{}
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(o), dep)).To(Succeed())
			}
		}
		Expect(dep).NotTo(BeNil(), "config/default has no Deployment")
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
			deploymentAvailable(g, dep)
		}).WithTimeout(90 * time.Second).Should(Succeed())
		noFailedCreate(ctx, nsName)
		dryRunPod(ctx, wc, nsName, dep.Spec.Template)
		Expect(warnings.all()).To(BeEmpty(), "warnings for the operator's pod")

		By("an ErgoNetwork in a namespace that enforces restricted gets its pod admitted, with no warnings")
		ns := newNamespace(ctx, restricted)
		op := startOperator("podsecurity", operatorConfig{namespace: ns})
		Expect(k8s.Create(ctx, ergotest.OperSecret(ns, "secure-oper", "restricted"))).To(Succeed())
		Expect(k8s.Create(ctx, ergotest.FullNetwork(ns, "secure", "secure.irc.test"))).To(Succeed())
		ergo := &appsv1.Deployment{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secure"}, ergo)).To(Succeed())
			deploymentAvailable(g, ergo)
		}).WithTimeout(90 * time.Second).Should(Succeed())
		noFailedCreate(ctx, ns)
		Expect(podsOf(ctx, ns, "secure")).To(HaveLen(1))

		By("the ergo Deployment and its pod pass restricted in warn mode too (server-side dry run)")
		dryRunPod(ctx, wc, ns, ergo.Spec.Template)
		probe := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "secure-dry-run", Namespace: ns},
			Spec:       *ergo.Spec.DeepCopy(),
		}
		Expect(wc.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		Expect(warnings.all()).To(BeEmpty(), "warnings for the ergo Deployment or pod")

		By("control: the same Deployment without its security context does draw warnings, so their absence above means something")
		probe = &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "insecure-dry-run", Namespace: ns},
			Spec:       *ergo.Spec.DeepCopy(),
		}
		probe.Spec.Template.Spec.SecurityContext = nil
		for i := range probe.Spec.Template.Spec.Containers {
			probe.Spec.Template.Spec.Containers[i].SecurityContext = nil
		}
		Expect(wc.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		Expect(warnings.all()).To(ContainElement(ContainSubstring(`would violate PodSecurity "restricted:latest"`)))
		warnings.reset()
		Expect(op.logContains("KubeAPIWarningLogger")).To(BeFalse(), "the operator was sent API warnings; see %s", op.LogPath)
	})
})

// applyOrder puts what others need first: namespaces and CRDs, then service accounts and RBAC, then the rest.
func applyOrder(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "Namespace", "CustomResourceDefinition":
		return 0
	case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		return 1
	}
	return 2
}

// dryRunPod creates (dry run) a pod from a template, through the warning client.
func dryRunPod(ctx context.Context, c client.Client, ns string, tmpl corev1.PodTemplateSpec) {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dry-run-", Namespace: ns, Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	Expect(c.Create(ctx, pod, client.DryRunAll)).To(Succeed(), "a pod from the template is refused")
}

// noFailedCreate asserts no ReplicaSet in ns had a pod refused (Pod Security enforce, quota, ...).
func noFailedCreate(ctx context.Context, ns string) {
	GinkgoHelper()
	var events corev1.EventList
	Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	for _, e := range events.Items {
		Expect(e.Reason).NotTo(Equal("FailedCreate"), "%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	}
}

// renderKustomization runs `kustomize build dir` with the kustomize the Makefile builds ($KUSTOMIZE, else
// the newest bin/kustomize-*).
func renderKustomization(ctx context.Context, dir string) []*unstructured.Unstructured {
	GinkgoHelper()
	bin := os.Getenv("KUSTOMIZE")
	if bin == "" {
		found, _ := filepath.Glob(filepath.Join(repoRoot, "bin", "kustomize-*"))
		slices.Sort(found)
		if len(found) > 0 {
			bin = found[len(found)-1]
		}
	}
	if bin == "" {
		Fail("no kustomize: run `make kustomize` (make test-e2e does) or set KUSTOMIZE")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "build", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "%s build %s: %s", bin, dir, stderr.String())

	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	Expect(objs).NotTo(BeEmpty())
	return objs
}
