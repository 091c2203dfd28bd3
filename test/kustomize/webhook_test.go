package kustomize

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/platform-operator/platform-operator/internal/kit/manager"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

const (
	namespace      = "platform-operator-system"
	deploymentName = "platform-operator-controller-manager"
	serviceName    = "platform-operator-webhook-service"
	certName       = "platform-operator-serving-cert"
	certSecret     = "webhook-server-cert"
	injectCAFrom   = "cert-manager.io/inject-ca-from"
)

// rendered is what `kustomize build` printed.
type rendered struct {
	objs []*unstructured.Unstructured
}

// build runs `kustomize build config/<dir>` with $KUSTOMIZE, else the newest bin/kustomize-* (`make
// kustomize` builds it; the test targets depend on it).
func build(t *testing.T, dir string) rendered {
	t.Helper()
	root := testutil.RepoRoot(t)
	bin := os.Getenv("KUSTOMIZE")
	if bin == "" {
		found, _ := filepath.Glob(filepath.Join(root, "bin", "kustomize-*"))
		slices.Sort(found)
		if len(found) == 0 {
			t.Fatal("no kustomize: run `make kustomize` or set KUSTOMIZE")
		}
		bin = found[len(found)-1]
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "build", filepath.Join(root, "config", dir))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s build config/%s: %v\n%s", bin, dir, err, stderr.String())
	}
	var r rendered
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			r.objs = append(r.objs, u)
		}
	}
	return r
}

// all converts every rendered object of kind into out's element type.
func all[T any](t *testing.T, r rendered, kind string) []*T {
	t.Helper()
	var out []*T
	for _, u := range r.objs {
		if u.GetKind() != kind {
			continue
		}
		obj := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			t.Fatalf("%s %s: %v", kind, u.GetName(), err)
		}
		out = append(out, obj)
	}
	return out
}

// one is the single rendered object of kind named name.
func one[T any](t *testing.T, r rendered, kind, name string) *T {
	t.Helper()
	for _, u := range r.objs {
		if u.GetKind() == kind && u.GetName() == name {
			obj := new(T)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return obj
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func managerContainer(t *testing.T, dep *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return &dep.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatal("the Deployment has no manager container")
	return nil
}

// checkService checks the webhook Service: 443 to the manager's webhook port, selecting the manager's
// pods (operator-sdk finds the CSV's deploymentName through this selector).
func checkService(t *testing.T, r rendered, dep *appsv1.Deployment) {
	t.Helper()
	svc := one[corev1.Service](t, r, "Service", serviceName)
	if svc.Namespace != namespace {
		t.Errorf("Service namespace %q, want %q", svc.Namespace, namespace)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.IntValue() != webhook.DefaultPort {
		t.Errorf("Service ports %+v, want 443 to %d (--webhook-port's default)", svc.Spec.Ports, webhook.DefaultPort)
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("Service selector %v does not select the manager's pods %v", svc.Spec.Selector, dep.Spec.Template.Labels)
	}
}

// failOpenUnderOLM are the webhooks that OLM, whose webhookdefinitions cannot carry their matchConditions,
// gets with failurePolicy Ignore (config/manifests), so that a stopped operator blocks neither removing a
// deleted Environment's finalizer nor deleting one; everywhere else they fail closed, with
// matchConditions that keep the API server from calling them for those requests.
var failOpenUnderOLM = []string{"venvironment-update.catalyst.catalyst.dev", "venvironment-delete.catalyst.catalyst.dev",
	"vdeployment-update.iot.nationtech.io"}

// checkWebhooks checks that there are webhook configurations and that each webhook calls the Service,
// refusing when it cannot be reached (olm: but failOpenUnderOLM, which must then be Ignore and without
// matchConditions, and otherwise carry them); it returns the configurations' annotations.
func checkWebhooks(t *testing.T, r rendered, olm bool) []map[string]string {
	t.Helper()
	validating := all[admissionregistrationv1.ValidatingWebhookConfiguration](t, r, "ValidatingWebhookConfiguration")
	if len(validating) == 0 {
		t.Fatal("no ValidatingWebhookConfiguration: config/webhook/manifests.yaml (make manifests) has none")
	}
	var annotations []map[string]string
	check := func(cfg, name string, cc admissionregistrationv1.WebhookClientConfig, fp *admissionregistrationv1.FailurePolicyType) {
		if s := cc.Service; s == nil || s.Name != serviceName || s.Namespace != namespace || s.Path == nil || *s.Path == "" ||
			(s.Port != nil && *s.Port != 443) {
			t.Errorf("%s webhook %s: clientConfig %+v, want Service %s/%s port 443 with a path", cfg, name, cc, namespace, serviceName)
		}
		want := admissionregistrationv1.Fail
		if olm && slices.Contains(failOpenUnderOLM, name) {
			want = admissionregistrationv1.Ignore
		}
		if fp == nil || *fp != want {
			t.Errorf("%s webhook %s: failurePolicy %v, want %s", cfg, name, fp, want)
		}
	}
	for _, c := range validating {
		for _, w := range c.Webhooks {
			check(c.Name, w.Name, w.ClientConfig, w.FailurePolicy)
			if slices.Contains(failOpenUnderOLM, w.Name) && olm == (len(w.MatchConditions) > 0) {
				t.Errorf("%s webhook %s: matchConditions %+v (OLM: %t): want them everywhere but in OLM's manifests", c.Name, w.Name, w.MatchConditions, olm)
			}
		}
		annotations = append(annotations, c.Annotations)
	}
	for _, c := range all[admissionregistrationv1.MutatingWebhookConfiguration](t, r, "MutatingWebhookConfiguration") {
		for _, w := range c.Webhooks {
			check(c.Name, w.Name, w.ClientConfig, w.FailurePolicy)
		}
		annotations = append(annotations, c.Annotations)
	}
	return annotations
}

func TestDefaultServesWebhooksWithCertManager(t *testing.T) {
	r := build(t, "default")
	dep := one[appsv1.Deployment](t, r, "Deployment", deploymentName)
	checkService(t, r, dep)

	t.Run("the manager mounts the certificate's Secret where it reads it", func(t *testing.T) {
		c := managerContainer(t, dep)
		if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return int(p.ContainerPort) == webhook.DefaultPort }) {
			t.Errorf("manager ports %+v lack %d", c.Ports, webhook.DefaultPort)
		}
		var volume string
		for _, m := range c.VolumeMounts {
			if m.MountPath == manager.DefaultWebhookCertDir {
				volume = m.Name
				if !m.ReadOnly {
					t.Errorf("mount %s is writable", m.MountPath)
				}
			}
		}
		if volume == "" {
			t.Fatalf("nothing is mounted at %s (--webhook-cert-dir's default): mounts %+v", manager.DefaultWebhookCertDir, c.VolumeMounts)
		}
		i := slices.IndexFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == volume })
		if i < 0 {
			t.Fatalf("no volume %s", volume)
		}
		v := dep.Spec.Template.Spec.Volumes[i]
		if v.Secret == nil || v.Secret.SecretName != certSecret || (v.Secret.Optional != nil && *v.Secret.Optional) {
			t.Errorf("volume %s: %+v, want the required Secret %s", volume, v.VolumeSource, certSecret)
		}
		for _, a := range c.Args {
			if a == "--enable-webhooks=false" {
				t.Error("the Deployment turns webhooks off")
			}
		}
	})

	t.Run("cert-manager makes the certificate for the Service", func(t *testing.T) {
		cert := one[cmv1.Certificate](t, r, "Certificate", certName)
		if cert.Namespace != namespace {
			t.Errorf("Certificate namespace %q", cert.Namespace)
		}
		want := []string{serviceName + "." + namespace + ".svc", serviceName + "." + namespace + ".svc.cluster.local"}
		if !slices.Equal(cert.Spec.DNSNames, want) {
			t.Errorf("dnsNames %q, want %q", cert.Spec.DNSNames, want)
		}
		if cert.Spec.SecretName != certSecret {
			t.Errorf("secretName %q, want the mounted %q", cert.Spec.SecretName, certSecret)
		}
		issuer := one[cmv1.Issuer](t, r, "Issuer", cert.Spec.IssuerRef.Name)
		if cert.Spec.IssuerRef.Kind != "Issuer" || issuer.Namespace != namespace || issuer.Spec.SelfSigned == nil {
			t.Errorf("issuerRef %+v, Issuer %s/%s %+v: want the self-signed Issuer beside the Certificate",
				cert.Spec.IssuerRef, issuer.Namespace, issuer.Name, issuer.Spec.IssuerConfig)
		}
	})

	t.Run("every webhook calls the Service and gets its CA from the Certificate", func(t *testing.T) {
		for _, a := range checkWebhooks(t, r, false) {
			if got, want := a[injectCAFrom], namespace+"/"+certName; got != want {
				t.Errorf("%s = %q, want %q", injectCAFrom, got, want)
			}
		}
	})
}

func TestManifestsGiveOLMTheWebhooksWithoutCertManager(t *testing.T) {
	r := build(t, "manifests")
	dep := one[appsv1.Deployment](t, r, "Deployment", deploymentName)
	checkService(t, r, dep)
	checkWebhooks(t, r, true)
	for _, kind := range []string{"Certificate", "Issuer"} {
		for _, u := range r.objs {
			if u.GetKind() == kind {
				t.Errorf("%s %s is rendered: OLM makes the certificate", kind, u.GetName())
			}
		}
	}
	c := managerContainer(t, dep)
	for _, m := range c.VolumeMounts {
		if m.MountPath == manager.DefaultWebhookCertDir {
			t.Errorf("a volume is mounted at %s: OLM mounts its certificate there", m.MountPath)
		}
	}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == certSecret {
			t.Errorf("volume %s needs Secret %s, which does not exist under OLM", v.Name, certSecret)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return int(p.ContainerPort) == webhook.DefaultPort }) {
		t.Errorf("manager ports %+v lack %s", c.Ports, strconv.Itoa(webhook.DefaultPort))
	}
}
