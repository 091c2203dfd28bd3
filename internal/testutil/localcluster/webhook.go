package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil/pki"
)

// How the operator serves admission webhooks on the local cluster. In a real cluster the API server calls
// them through a Service with a certificate OLM or cert-manager made (docs/webhooks.md). Here the API
// server runs on this machine, so StartOperator gives every operator process a certificate for 127.0.0.1
// signed by a CA of its own (WriteWebhookCerts), and, when OperatorOptions.WebhookManifests names
// config/webhook/manifests.yaml, installs those webhook configurations rewritten to call
// https://127.0.0.1:<port><path> and to trust that CA (LocalWebhookConfigurations).

// Names of the files WriteWebhookCerts writes: the operator's --webhook-cert-dir reads the first two.
const (
	WebhookCertFile = "tls.crt"
	WebhookKeyFile  = "tls.key"
	WebhookCAFile   = "ca.crt"
)

// WebhookProbeLabel marks the ConfigMaps InstallWebhooks sends (as dry runs) to learn that the API server
// calls a configuration it installed: each installed configuration carries one more webhook, for
// ConfigMaps whose label has the configuration's name, at a path nobody serves. Its refusal proves the
// configuration is in force.
const WebhookProbeLabel = "localcluster.platform-operator.dev/webhook-probe"

// webhookProbePath is the probe webhook's path: the operator answers 404, which the API server reports
// as a failed call to the probe.
const webhookProbePath = "/localcluster-webhook-probe"

// probeNotFound is how the API server reports the probe webhook's 404 (the message of an HTTP 404
// status from a webhook call).
const probeNotFound = "the server could not find the requested resource"

// webhookProbeName is the probe webhook's name within each installed configuration.
const webhookProbeName = "probe.localcluster.platform-operator.dev"

// webhookCertValidity is how long the local certificates are valid: longer than any test or demo runs.
const webhookCertValidity = 30 * 24 * time.Hour

// WebhookCerts is a webhook server's certificate on disk and the CA that signed it.
type WebhookCerts struct {
	// Dir holds tls.crt (the serving certificate, for 127.0.0.1 and localhost), tls.key and ca.crt.
	Dir string
	// CA is the PEM of the CA certificate: the caBundle of the webhook configurations that call the server.
	CA []byte
}

// WriteWebhookCerts creates dir if need be and writes into it a new CA and a serving certificate for
// 127.0.0.1 and localhost signed by it, with their keys (ECDSA P-256). The CA's key is not kept: nothing
// else is ever signed with it.
func WriteWebhookCerts(dir string) (*WebhookCerts, error) {
	ca, err := pki.NewCA("localcluster webhook CA", webhookCertValidity)
	if err != nil {
		return nil, err
	}
	srv, err := ca.Server("127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{WebhookCAFile, ca.PEM},
		{WebhookKeyFile, srv.Key},
		// The certificate last: controller-runtime's certificate watcher may read the pair as soon as
		// tls.crt appears.
		{WebhookCertFile, srv.Cert},
	} {
		if _, err := pki.WriteFile(dir, f.name, f.data); err != nil {
			return nil, err
		}
	}
	return &WebhookCerts{Dir: dir, CA: ca.PEM}, nil
}

// ReadWebhookConfigurations reads the ValidatingWebhookConfigurations and MutatingWebhookConfigurations
// of a file such as config/webhook/manifests.yaml (what `make manifests` writes from the
// +kubebuilder:webhook markers). Any other kind in it is an error.
func ReadWebhookConfigurations(path string) ([]client.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []client.Object
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var obj client.Object
		switch meta.GroupVersionKind() {
		case admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"):
			obj = &admissionregistrationv1.ValidatingWebhookConfiguration{}
		case admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"):
			obj = &admissionregistrationv1.MutatingWebhookConfiguration{}
		default:
			if meta.Kind == "" && isComment(doc) {
				continue
			}
			return nil, fmt.Errorf("%s: %s %s is not a webhook configuration", path, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// isComment tells whether a YAML document holds only comments and blank lines.
func isComment(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}

// LocalWebhookConfigurations rewrites webhook configurations read by ReadWebhookConfigurations for a
// webhook server on this machine: every webhook calls https://<addr><path of its service reference>
// trusting ca instead of a Service, each configuration is named <name>-<suffix> (so that each operator
// process has its own, removed when it stops), and each gets a probe webhook (WebhookProbeLabel). With
// namespaces, the webhooks see only objects in those namespaces, as OLM scopes a CSV's webhooks to its
// OperatorGroup's target namespaces: an operator watching one namespace is not asked about others.
// objs are not changed.
func LocalWebhookConfigurations(objs []client.Object, addr string, ca []byte, suffix string, namespaces []string) ([]client.Object, error) {
	var out []client.Object
	for _, obj := range objs {
		name := obj.GetName() + "-" + suffix
		probe := probeWebhook(name, addr, ca)
		// localize points one webhook of the configuration at addr and scopes it to namespaces.
		localize := func(webhook string, cc *admissionregistrationv1.WebhookClientConfig, sel **metav1.LabelSelector) error {
			local, err := localClientConfig(webhook, *cc, addr, ca)
			if err != nil {
				return err
			}
			*cc, *sel = local, inNamespaces(*sel, namespaces)
			return nil
		}
		switch o := obj.(type) {
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			c := o.DeepCopy()
			c.ObjectMeta = localMeta(o.ObjectMeta, name)
			for i := range c.Webhooks {
				if err := localize(c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig, &c.Webhooks[i].NamespaceSelector); err != nil {
					return nil, err
				}
			}
			c.Webhooks = append(c.Webhooks, probe)
			out = append(out, c)
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			c := o.DeepCopy()
			c.ObjectMeta = localMeta(o.ObjectMeta, name)
			for i := range c.Webhooks {
				if err := localize(c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig, &c.Webhooks[i].NamespaceSelector); err != nil {
					return nil, err
				}
			}
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{
				Name: probe.Name, ClientConfig: probe.ClientConfig, Rules: probe.Rules,
				FailurePolicy: probe.FailurePolicy, SideEffects: probe.SideEffects, ObjectSelector: probe.ObjectSelector,
				AdmissionReviewVersions: probe.AdmissionReviewVersions, TimeoutSeconds: probe.TimeoutSeconds,
			})
			out = append(out, c)
		default:
			return nil, fmt.Errorf("%T %s is not a webhook configuration", obj, obj.GetName())
		}
	}
	return out, nil
}

// probeWebhook is the probe webhook of the configuration named name (WebhookProbeLabel); a mutating
// configuration carries the same fields.
func probeWebhook(name, addr string, ca []byte) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: webhookProbeName, ClientConfig: probeClientConfig(addr, ca), Rules: probeRules(),
		FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
		ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{WebhookProbeLabel: name}},
		AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To(int32(5)),
	}
}

// localMeta keeps the labels and annotations, but none of the server's fields, under a new name.
func localMeta(m metav1.ObjectMeta, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: m.Labels, Annotations: m.Annotations}
}

func localClientConfig(webhook string, cc admissionregistrationv1.WebhookClientConfig, addr string, ca []byte) (admissionregistrationv1.WebhookClientConfig, error) {
	if cc.Service == nil || cc.Service.Path == nil {
		return cc, fmt.Errorf("webhook %s calls no service path: the operator serves each webhook at the path of its marker", webhook)
	}
	url := "https://" + addr + *cc.Service.Path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: slices.Clone(ca)}, nil
}

func probeClientConfig(addr string, ca []byte) admissionregistrationv1.WebhookClientConfig {
	url := "https://" + addr + webhookProbePath
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: slices.Clone(ca)}
}

func probeRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
			Scope: ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}
}

// inNamespaces narrows sel to the namespaces named; none leaves it as it is.
func inNamespaces(sel *metav1.LabelSelector, namespaces []string) *metav1.LabelSelector {
	if len(namespaces) == 0 {
		return sel
	}
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: slices.Clone(namespaces),
	})
	return sel
}

// InstallWebhooks creates the configurations LocalWebhookConfigurations made, then waits until the API
// server calls each of them: a dry-run ConfigMap carrying the configuration's probe label must be refused
// by a call to its server (the server answers 404 on the probe path). A configuration is in force some
// time after it is created; a test that creates an object right after StartOperator returns must not race
// with that. If the wait fails, what was created stays: call UninstallWebhooks.
func InstallWebhooks(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("install webhook configuration %s: %w", obj.GetName(), err)
		}
	}
	for _, obj := range objs {
		if err := waitWebhookProbe(ctx, c, obj.GetName()); err != nil {
			return err
		}
	}
	return nil
}

// waitWebhookProbe polls until the API server refuses a dry-run ConfigMap because the probe webhook of
// configuration name answered 404: the call went through TLS with the configured CA to the server.
func waitWebhookProbe(ctx context.Context, c client.Client, name string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("no answer yet")
	for {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "webhook-probe-", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{WebhookProbeLabel: name},
		}}
		err := c.Create(ctx, cm, client.DryRunAll)
		if ctx.Err() != nil {
			// Whatever the request says now is about the deadline, not the webhook.
			return fmt.Errorf("webhook configuration %s is not in force: %w (%w)", name, last, ctx.Err())
		}
		switch {
		case err == nil:
			last = errors.New("the API server does not call it yet")
		case strings.Contains(err.Error(), webhookProbeName) && strings.Contains(err.Error(), probeNotFound):
			return nil
		default:
			// A refusal for another reason (TLS, connection) is what a wrong CA or address gives: say so if
			// it never changes.
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("webhook configuration %s is not in force: %w (%w)", name, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// UninstallWebhooks deletes the configurations InstallWebhooks created; one already gone is fine.
func UninstallWebhooks(ctx context.Context, c client.Client, objs []client.Object) error {
	var errs []error
	for _, obj := range objs {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove webhook configuration %s: %w", obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// kubeconfigClient is a direct client for the cluster of a kubeconfig file.
func kubeconfigClient(path string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.Scheme})
}

// operatorWebhooks is what StartOperator adds to an operator process for its admission webhooks.
type operatorWebhooks struct {
	// WebhookAddr is where the operator serves its admission webhooks (host:port on 127.0.0.1, HTTPS with
	// WebhookCerts' certificate).
	WebhookAddr string
	// WebhookCerts is the certificate the webhook server serves (--webhook-cert-dir) and the CA that
	// signed it. Stop removes its directory.
	WebhookCerts *WebhookCerts
	// Webhooks are the webhook configurations installed for this process (OperatorOptions.WebhookManifests),
	// as created; Stop deletes them.
	Webhooks []client.Object

	webhookMu     sync.Mutex
	webhookClient client.Client
}

// prepareWebhooks writes the process's certificate into a new temporary directory and returns the flags
// that serve it on addr.
func (w *operatorWebhooks) prepareWebhooks(addr string) ([]string, error) {
	dir, err := os.MkdirTemp("", "platform-operator-webhook-")
	if err != nil {
		return nil, err
	}
	certs, err := WriteWebhookCerts(dir)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	w.WebhookAddr, w.WebhookCerts = addr, certs
	return []string{"--webhook-host=" + host, "--webhook-port=" + port, "--webhook-cert-dir=" + dir}, nil
}

// installWebhooks installs the configurations of o.WebhookManifests pointed at this process, scoped to
// the namespaces of the WATCH_NAMESPACE that o.Env gives the process (none: all), and waits until the API
// server calls them.
func (w *operatorWebhooks) installWebhooks(ctx context.Context, o OperatorOptions) error {
	objs, err := ReadWebhookConfigurations(o.WebhookManifests)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(w.WebhookAddr)
	local, err := LocalWebhookConfigurations(objs, w.WebhookAddr, w.WebhookCerts.CA, port, watchNamespaces(o.Env))
	if err != nil {
		return err
	}
	c, err := kubeconfigClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	w.webhookMu.Lock()
	w.webhookClient, w.Webhooks = c, local
	w.webhookMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	return InstallWebhooks(ctx, c, local)
}

// watchNamespaces is the list WATCH_NAMESPACE gives in env (its last setting wins, as in the process).
func watchNamespaces(env []string) []string {
	var list string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "WATCH_NAMESPACE="); ok {
			list = v
		}
	}
	var out []string
	for _, ns := range strings.Split(list, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// stopWebhooks deletes the installed configurations (first, so the API server stops calling a process
// about to go) and reports what failed; removeWebhookCerts runs once the process is gone.
func (w *operatorWebhooks) stopWebhooks() error {
	w.webhookMu.Lock()
	defer w.webhookMu.Unlock()
	if len(w.Webhooks) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := UninstallWebhooks(ctx, w.webhookClient, w.Webhooks); err != nil {
		return err
	}
	w.Webhooks = nil
	return nil
}

func (w *operatorWebhooks) removeWebhookCerts() error {
	if w.WebhookCerts == nil {
		return nil
	}
	return os.RemoveAll(w.WebhookCerts.Dir)
}
