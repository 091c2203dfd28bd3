package iot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/kit/admit"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/localcluster"
)

// The namespaces of the policy specs. The suite's webhook configurations see only them (the other specs'
// namespaces get the "*=*" entry and no webhook), so the specs run in any order.
const (
	nsTight    = "policy-tight"    // site:lyon|paris, through the suite manager's webhook
	nsOpen     = "policy-open"     // *, through the suite manager's webhook
	nsStored   = "policy-stored"   // fleet:policy-stored-ok, no webhook: the controller alone
	nsRegistry = "policy-registry" // a webhook allowing registry.example.com/allowed only
	nsDigest   = "policy-digest"   // a webhook requiring digests
)

const pinned = "registry.example/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var (
	webhookCerts *localcluster.WebhookCerts
	webhookPort  int
)

// suitePolicy is the suite reconciler's policy: every namespace but the policy specs' may target any
// device, with any image.
func suitePolicy() Policy {
	GinkgoHelper()
	p, err := ParseFleetPolicy(nsTight + "=site:lyon|paris;" + nsOpen + "=*;" + nsStored + "=fleet:policy-stored-ok;" + nsCred + "=site:cred-lyon;*=*")
	Expect(err).NotTo(HaveOccurred())
	return Policy{Fleet: p}
}

// startWebhookCerts writes the webhook servers' certificate and picks the suite manager's port.
func startWebhookCerts() (*localcluster.WebhookCerts, int) {
	GinkgoHelper()
	certs, err := localcluster.WriteWebhookCerts(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	ports, err := testutil.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	return certs, ports[0]
}

// shippedWebhookConfigurations are the ValidatingWebhookConfigurations of config/webhook as it ships (its
// kustomization's patches applied: the update webhook's matchConditions).
func shippedWebhookConfigurations() []client.Object {
	GinkgoHelper()
	path, err := testutil.WebhookManifests(filepath.Join("..", ".."), GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []client.Object
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		var tm metav1.TypeMeta
		Expect(yaml.Unmarshal(doc, &tm)).To(Succeed())
		if tm.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(yaml.UnmarshalStrict(doc, c)).To(Succeed())
		out = append(out, c)
	}
	Expect(out).NotTo(BeEmpty())
	return out
}

// installWebhooks points the shipped configurations at addr for namespaces only, and removes them when the
// container ends.
func installWebhooks(ctx context.Context, addr, suffix string, namespaces ...string) {
	GinkgoHelper()
	objs, err := localcluster.LocalWebhookConfigurations(shippedWebhookConfigurations(), addr, webhookCerts.CA, suffix, namespaces)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) { Expect(localcluster.UninstallWebhooks(ctx, k8s, objs)).To(Succeed()) })
	Expect(localcluster.InstallWebhooks(ctx, k8s, objs)).To(Succeed())
}

// serveValidator serves a DeploymentValidator with policy at the path of the group's webhook, as the
// operator would with other flags, until the container ends; it returns its address.
func serveValidator(policy Policy) string {
	GinkgoHelper()
	ports, err := testutil.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: ports[0], CertDir: webhookCerts.Dir})
	srv.Register("/validate-iot-nationtech-io-v1alpha1-deployment",
		admission.WithCustomValidator(scheme.Scheme, &iotv1.Deployment{}, admit.Typed(&DeploymentValidator{Policy: policy})))
	ctx, stop := context.WithCancel(context.Background())
	DeferCleanup(stop)
	go func() {
		defer GinkgoRecover()
		Expect(srv.Start(ctx)).To(Succeed())
	}()
	return "127.0.0.1:" + strconv.Itoa(ports[0])
}

func ensureNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

// refusedBy expects err to be the webhook's refusal, naming what.
func refusedBy(err error, webhookName, what string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "admitted")
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "not Forbidden: %v", err)
	Expect(err.Error()).To(ContainSubstring(`admission webhook "` + webhookName + `" denied the request`))
	Expect(err.Error()).To(ContainSubstring(what))
}

// patch changes the stored d with a merge patch (no resourceVersion: the controller's finalizer may be
// written meanwhile).
func patch(ctx context.Context, d *iotv1.Deployment, change func(*iotv1.Deployment)) error {
	got := get(ctx, d)
	before := got.DeepCopy()
	change(got)
	return k8s.Patch(ctx, got, client.MergeFrom(before))
}

func withSelector(d *iotv1.Deployment, labels map[string]string) *iotv1.Deployment {
	d.Spec.TargetSelector = metav1.LabelSelector{MatchLabels: labels}
	return d
}

var _ = Describe("iot Deployment policy", Ordered, func() {
	BeforeAll(func(ctx SpecContext) {
		for _, ns := range []string{nsTight, nsOpen, nsStored, nsRegistry, nsDigest} {
			ensureNamespace(ctx, ns)
		}
		// The group's webhook, registered by Group in the suite's manager with the suite's policy.
		installWebhooks(ctx, "127.0.0.1:"+strconv.Itoa(webhookPort), "iot-suite", nsTight, nsOpen)
		all, err := ParseFleetPolicy("*=*")
		Expect(err).NotTo(HaveOccurred())
		installWebhooks(ctx, serveValidator(Policy{Fleet: all, Images: ImagePolicy{Registries: []string{"registry.example.com/allowed"}}}), "iot-registry", nsRegistry)
		installWebhooks(ctx, serveValidator(Policy{Fleet: all, Images: ImagePolicy{RequireDigest: true}}), "iot-digest", nsDigest)
	})

	It("refuses a selector outside the namespace's rule, naming the rule, and admits the same Deployment within it", func(ctx SpecContext) {
		d := withSelector(fleettest.Deployment(nsTight, "outside", "", "registry.example/web:1"), map[string]string{"site": "berlin"})
		refusedBy(k8s.Create(ctx, d), "vdeployment.iot.nationtech.io", `rule "policy-tight=site:lyon|paris"`)

		By("an In expression with a value outside the rule")
		d = fleettest.Deployment(nsTight, "outside", "", "registry.example/web:1")
		d.Spec.TargetSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "site", Operator: metav1.LabelSelectorOpIn, Values: []string{"lyon", "berlin"}}}}
		refusedBy(k8s.Create(ctx, d), "vdeployment.iot.nationtech.io", `rule "policy-tight=site:lyon|paris"`)

		By("the control: the same Deployment targeting an allowed site")
		d = withSelector(fleettest.Deployment(nsTight, "outside", "", "registry.example/web:1"), map[string]string{"site": "lyon"})
		Expect(k8s.Create(ctx, d)).To(Succeed())

		By("an update moving it outside is refused too; one that leaves the spec alone is admitted")
		refusedBy(patch(ctx, d, func(d *iotv1.Deployment) { d.Spec.TargetSelector.MatchLabels["site"] = "berlin" }),
			"vdeployment-update.iot.nationtech.io", `rule "policy-tight=site:lyon|paris"`)
		Expect(patch(ctx, d, func(d *iotv1.Deployment) { d.Labels = map[string]string{"team": "a"} })).To(Succeed())
		Expect(patch(ctx, d, func(d *iotv1.Deployment) { d.Spec.TargetSelector.MatchLabels["site"] = "paris" })).To(Succeed())
	})

	It("refuses targetSelector {} (every device) unless the namespace's rule is NAMESPACE=*", func(ctx SpecContext) {
		refusedBy(k8s.Create(ctx, withSelector(fleettest.Deployment(nsTight, "everywhere", "", "registry.example/web:1"), nil)),
			"vdeployment.iot.nationtech.io", "targetSelector {} (every device of the fleet)")
		Expect(k8s.Create(ctx, withSelector(fleettest.Deployment(nsOpen, "everywhere", "", "registry.example/web:1"), nil))).To(Succeed())
	})

	It("refuses an image from a registry --iot-allowed-registries does not list, and admits one it lists", func(ctx SpecContext) {
		refusedBy(k8s.Create(ctx, fleettest.Deployment(nsRegistry, "web", "x", "registry.example.com/other/web:1")),
			"vdeployment.iot.nationtech.io", "image registry.example.com/other/web:1")
		refusedBy(k8s.Create(ctx, fleettest.Deployment(nsRegistry, "web", "x", "registry.example.com.evil.example/allowed/web:1")),
			"vdeployment.iot.nationtech.io", "--iot-allowed-registries")
		Expect(k8s.Create(ctx, fleettest.Deployment(nsRegistry, "web", "x", "registry.example.com/allowed/web:1"))).To(Succeed())
	})

	It("refuses a tag when --iot-require-digest is set, and admits a digest", func(ctx SpecContext) {
		refusedBy(k8s.Create(ctx, fleettest.Deployment(nsDigest, "web", "x", "registry.example/web:1")),
			"vdeployment.iot.nationtech.io", "not pinned by digest")
		Expect(k8s.Create(ctx, fleettest.Deployment(nsDigest, "web", "x", pinned))).To(Succeed())
	})

	It("publishes nothing for a Deployment stored outside the policy (PolicyViolation), and publishes it once within", func(ctx SpecContext) {
		// The policy names the key fleet: it counts from the devices' credentials.
		devices := startCredentialFleet("policy-stored-ok", "policy-stored-ok", 2)
		devices = append(devices, startCredentialFleet("policy-stored-other", "policy-stored-other", 1)...)
		DeferCleanup(stopAll, devices)

		// No webhook sees this namespace: the object is stored as one from before the policy changed.
		d := fleettest.Deployment(nsStored, "web", "policy-stored-other", "registry.example/web:1")
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, d)
			ready := condition(got, iotv1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(iotv1.ReasonPolicyViolation))
			g.Expect(ready.Message).To(ContainSubstring(`rule "policy-stored=fleet:policy-stored-ok"`))
			g.Expect(condition(got, iotv1.ConditionProgressing).Reason).To(Equal(iotv1.ReasonPolicyViolation))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}).Should(Succeed())
		Consistently(func() map[string]int64 { return desiredGenerations(ctx, d) }).Should(BeEmpty(), "published outside the policy")
		var events corev1.EventList
		Expect(k8s.List(ctx, &events, client.InNamespace(nsStored))).To(Succeed())
		Expect(events.Items).To(ContainElement(HaveField("Reason", iotv1.ReasonPolicyViolation)))

		By("the control: the selector moved within the policy is published")
		Expect(patch(ctx, d, func(d *iotv1.Deployment) { d.Spec.TargetSelector.MatchLabels["fleet"] = "policy-stored-ok" })).To(Succeed())
		got := get(ctx, d)
		Eventually(func() map[string]int64 { return desiredGenerations(ctx, d) }).Should(Equal(map[string]int64{
			"policy-stored-ok-0": got.Generation, "policy-stored-ok-1": got.Generation}))
		Eventually(func() string { return condition(get(ctx, d), iotv1.ConditionReady).Reason }).Should(Equal(iotv1.ReasonReady))
	})
})
