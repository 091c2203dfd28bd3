package localcluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// fakeWebhookPath is the webhook the fake operator (TestMain) serves: it refuses whatever it is asked.
const fakeWebhookPath = "/validate-fake-configmaps"

// refuseLabel marks the ConfigMaps the tests' webhook configurations send to a webhook.
const refuseLabel = "localcluster-test/refuse"

// serveFakeWebhooks serves, with the certificate in certDir, a webhook at fakeWebhookPath that refuses
// every object, saying which process refused it; other paths answer 404. Without certDir it does nothing.
func serveFakeWebhooks(addr, certDir string) error {
	if certDir == "" {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, WebhookCertFile), filepath.Join(certDir, WebhookKeyFile))
	if err != nil {
		return err
	}
	l, err := tls.Listen("tcp", addr, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(fakeWebhookPath, refuseHandler(fmt.Sprintf("refused by the fake operator (pid %d)", os.Getpid()), nil))
	go func() { _ = http.Serve(l, mux) }()
	return nil
}

// refuseHandler answers AdmissionReviews with a refusal carrying message, and tells seen (when set) the
// namespace and name of each object it was asked about.
func refuseHandler(message string, seen func(ns, name string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview request", http.StatusBadRequest)
			return
		}
		if seen != nil {
			var obj metav1.PartialObjectMetadata
			_ = json.Unmarshal(review.Request.Object.Raw, &obj)
			seen(review.Request.Namespace, cmp.Or(obj.Name, review.Request.Name))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{
			TypeMeta: review.TypeMeta,
			Response: &admissionv1.AdmissionResponse{
				UID: review.Request.UID, Allowed: false,
				Result: &metav1.Status{Message: message, Code: http.StatusForbidden},
			},
		})
	})
}

func TestWriteWebhookCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	certs, err := WriteWebhookCerts(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := WriteWebhookCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if certs.Dir != dir {
		t.Errorf("Dir = %s, want %s", certs.Dir, dir)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, WebhookCertFile), filepath.Join(dir, WebhookKeyFile))
	if err != nil {
		t.Fatalf("tls.crt and tls.key are not a pair: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := os.ReadFile(filepath.Join(dir, WebhookCAFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(caFile) != string(certs.CA) {
		t.Error("ca.crt is not WebhookCerts.CA")
	}
	pool := func(pemCA []byte) *x509.CertPool {
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(pemCA) {
			t.Fatal("CA is not PEM")
		}
		return p
	}
	tests := []struct {
		name    string
		ca      []byte
		host    string
		wantErr bool
	}{
		{"127.0.0.1 with its CA", certs.CA, "127.0.0.1", false},
		{"localhost with its CA", certs.CA, "localhost", false},
		{"another host", certs.CA, "10.0.0.1", true},
		{"another CA", other.CA, "127.0.0.1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := leaf.Verify(x509.VerifyOptions{
				Roots: pool(tt.ca), DNSName: tt.host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			if (err != nil) != tt.wantErr {
				t.Errorf("Verify = %v, want error %v", err, tt.wantErr)
			}
		})
	}
	block, _ := pem.Decode(certs.CA)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.IsCA || !ca.MaxPathLenZero {
		t.Errorf("CA: IsCA %v, MaxPathLenZero %v", ca.IsCA, ca.MaxPathLenZero)
	}
	for _, f := range []string{WebhookKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
}

// manifestsYAML is shaped like what controller-gen writes into config/webhook/manifests.yaml.
const manifestsYAML = `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-fake-configmaps
  failurePolicy: Fail
  name: mfake.localcluster.test
  rules:
  - apiGroups:
    - ""
    apiVersions:
    - v1
    operations:
    - CREATE
    resources:
    - configmaps
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-fake-configmaps
  failurePolicy: Fail
  name: vfake.localcluster.test
  objectSelector:
    matchLabels:
      localcluster-test/refuse: "yes"
  rules:
  - apiGroups:
    - ""
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - configmaps
  sideEffects: None
`

// validatingYAML is manifestsYAML's ValidatingWebhookConfiguration alone.
func validatingYAML() string {
	_, v, _ := strings.Cut(manifestsYAML[4:], "---\n")
	return "---\n" + v
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadWebhookConfigurations(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		wantKinds []string
		wantErr   string
	}{
		{name: "controller-gen's output", content: manifestsYAML,
			wantKinds: []string{"MutatingWebhookConfiguration mutating-webhook-configuration", "ValidatingWebhookConfiguration validating-webhook-configuration"}},
		{name: "comments and empty documents", content: "# generated\n---\n---\n" + validatingYAML(),
			wantKinds: []string{"ValidatingWebhookConfiguration validating-webhook-configuration"}},
		{name: "another kind", content: "apiVersion: v1\nkind: Service\nmetadata:\n  name: webhook-service\n", wantErr: "v1 Service is not a webhook configuration"},
		{name: "a misspelt field", content: strings.Replace(validatingYAML(), "objectSelector", "objectSelecter", 1), wantErr: "objectSelecter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ReadWebhookConfigurations(writeFile(t, tt.content))
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			var got []string
			for _, o := range objs {
				kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*v1.")
				got = append(got, kind+" "+o.GetName())
			}
			if !slices.Equal(got, tt.wantKinds) {
				t.Errorf("read %q, want %q", got, tt.wantKinds)
			}
		})
	}
	if _, err := ReadWebhookConfigurations(filepath.Join(t.TempDir(), "absent.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestLocalWebhookConfigurations(t *testing.T) {
	objs, err := ReadWebhookConfigurations(writeFile(t, manifestsYAML))
	if err != nil {
		t.Fatal(err)
	}
	before := objs[1].(*admissionregistrationv1.ValidatingWebhookConfiguration).DeepCopy()
	ca := []byte("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n")

	tests := []struct {
		name       string
		namespaces []string
		wantNS     []string // nil: no namespace selector
	}{
		{name: "every namespace"},
		{name: "the watched namespaces", namespaces: []string{"team-a", "team-b"}, wantNS: []string{"team-a", "team-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			local, err := LocalWebhookConfigurations(objs, "127.0.0.1:4443", ca, "4443", tt.namespaces)
			if err != nil {
				t.Fatal(err)
			}
			m := local[0].(*admissionregistrationv1.MutatingWebhookConfiguration)
			v := local[1].(*admissionregistrationv1.ValidatingWebhookConfiguration)
			if m.Name != "mutating-webhook-configuration-4443" || v.Name != "validating-webhook-configuration-4443" {
				t.Errorf("names %s, %s", m.Name, v.Name)
			}
			check := func(kind, name string, cc admissionregistrationv1.WebhookClientConfig, sel *metav1.LabelSelector, wantURL string) {
				t.Helper()
				if cc.Service != nil || cc.URL == nil || *cc.URL != wantURL {
					t.Errorf("%s webhook %s: clientConfig %+v, want url %s and no service", kind, name, cc, wantURL)
				}
				if string(cc.CABundle) != string(ca) {
					t.Errorf("%s webhook %s: caBundle %q", kind, name, cc.CABundle)
				}
				var gotNS []string
				if sel != nil {
					for _, r := range sel.MatchExpressions {
						if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn {
							gotNS = r.Values
						}
					}
				}
				if !slices.Equal(gotNS, tt.wantNS) {
					t.Errorf("%s webhook %s: namespaces %q, want %q", kind, name, gotNS, tt.wantNS)
				}
			}
			if len(m.Webhooks) != 2 || len(v.Webhooks) != 2 {
				t.Fatalf("webhooks: %d mutating, %d validating; want each configuration's own and a probe", len(m.Webhooks), len(v.Webhooks))
			}
			check("mutating", m.Webhooks[0].Name, m.Webhooks[0].ClientConfig, m.Webhooks[0].NamespaceSelector, "https://127.0.0.1:4443/mutate-fake-configmaps")
			check("validating", v.Webhooks[0].Name, v.Webhooks[0].ClientConfig, v.Webhooks[0].NamespaceSelector, "https://127.0.0.1:4443/validate-fake-configmaps")
			if got := v.Webhooks[0].ObjectSelector.MatchLabels[refuseLabel]; got != "yes" {
				t.Errorf("the webhook's own objectSelector was lost: %v", v.Webhooks[0].ObjectSelector)
			}
			for _, p := range []admissionregistrationv1.ValidatingWebhook{v.Webhooks[1]} {
				if p.Name != webhookProbeName || *p.ClientConfig.URL != "https://127.0.0.1:4443"+webhookProbePath ||
					p.ObjectSelector.MatchLabels[WebhookProbeLabel] != v.Name || p.NamespaceSelector != nil {
					t.Errorf("probe webhook %+v", p)
				}
			}
			if p := m.Webhooks[1]; p.Name != webhookProbeName || p.ObjectSelector.MatchLabels[WebhookProbeLabel] != m.Name {
				t.Errorf("mutating probe webhook %+v", p)
			}
		})
	}
	if after := objs[1].(*admissionregistrationv1.ValidatingWebhookConfiguration); !equalJSON(t, before, after) {
		t.Error("LocalWebhookConfigurations changed its input")
	}

	noPath := strings.Replace(validatingYAML(), "      path: /validate-fake-configmaps\n", "", 1)
	objs, err = ReadWebhookConfigurations(writeFile(t, noPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LocalWebhookConfigurations(objs, "127.0.0.1:1", ca, "1", nil); err == nil || !strings.Contains(err.Error(), "vfake.localcluster.test calls no service path") {
		t.Errorf("a webhook without a path: %v", err)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func TestWatchNamespaces(t *testing.T) {
	tests := []struct {
		env  []string
		want []string
	}{
		{nil, nil},
		{[]string{"WATCH_NAMESPACE="}, nil},
		{[]string{"PATH=/bin", "WATCH_NAMESPACE=a"}, []string{"a"}},
		{[]string{"WATCH_NAMESPACE=a, b,,c "}, []string{"a", "b", "c"}},
		{[]string{"WATCH_NAMESPACE=a", "WATCH_NAMESPACE=b"}, []string{"b"}},
	}
	for _, tt := range tests {
		if got := watchNamespaces(tt.env); !slices.Equal(got, tt.want) {
			t.Errorf("watchNamespaces(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

// TestWebhooksOnLocalCluster proves that the API server of the local cluster calls webhooks configured
// the way StartOperator configures them: over TLS to 127.0.0.1 with the CA WriteWebhookCerts made. A wrong
// CA or address is shown to fail, so a refusal below is the webhook's.
func TestWebhooksOnLocalCluster(t *testing.T) {
	c := startWithoutExternalCRDs(t)
	k8s := c.Client()
	createNamespaces(t, k8s, "team-a", "team-b")
	manifests := writeFile(t, validatingYAML())
	objs, err := ReadWebhookConfigurations(manifests)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(ns, name string) error {
		return k8s.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Labels: map[string]string{refuseLabel: "yes"},
		}})
	}

	t.Run("an in-process webhook server", func(t *testing.T) {
		certs, err := WriteWebhookCerts(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var seen []string
		addr := serveTLS(t, certs, fakeWebhookPath, refuseHandler("refused by the test's webhook", func(ns, name string) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ns+"/"+name)
		}))

		t.Run("control: a CA that did not sign the certificate", func(t *testing.T) {
			other, err := WriteWebhookCerts(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			installFails(t, k8s, objs, addr, other.CA, "wrong-ca", "certificate signed by unknown authority")
		})
		t.Run("control: an address nothing listens on", func(t *testing.T) {
			installFails(t, k8s, objs, closedAddr(t), certs.CA, "wrong-addr", "connection refused")
		})

		local, err := LocalWebhookConfigurations(objs, addr, certs.CA, "in-process", nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), DefaultOperatorReadyTimeout)
		defer cancel()
		if err := InstallWebhooks(ctx, k8s, local); err != nil {
			t.Fatal(err)
		}
		err = refused("team-a", "labelled")
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "refused by the test's webhook") {
			t.Errorf("a labelled ConfigMap: %v, want the webhook's refusal", err)
		}
		mu.Lock()
		if !slices.Contains(seen, "team-a/labelled") {
			t.Errorf("the webhook was asked about %q, want team-a/labelled among them", seen)
		}
		mu.Unlock()
		if err := k8s.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "unlabelled"}}); err != nil {
			t.Errorf("a ConfigMap the webhook's objectSelector leaves out: %v", err)
		}
		if err := UninstallWebhooks(t.Context(), k8s, local); err != nil {
			t.Fatal(err)
		}
		if err := UninstallWebhooks(t.Context(), k8s, local); err != nil {
			t.Errorf("uninstalling twice: %v", err)
		}
		// Once the API server has let go of the configuration, a labelled ConfigMap passes (and the next
		// subtest sees only its own webhooks).
		if err := eventually(t, func() error { return refused("team-a", "after-uninstall") }); err != nil {
			t.Errorf("after UninstallWebhooks, a labelled ConfigMap: %v", err)
		}
	})

	t.Run("StartOperator with WebhookManifests", func(t *testing.T) {
		o := fakeOptions(t, "")
		o.Kubeconfig = c.KubeconfigPath()
		o.Env = append(o.Env, "WATCH_NAMESPACE=team-a")
		o.WebhookManifests = manifests
		op, stop := startOperator(t, o)
		if len(op.Webhooks) != 1 {
			t.Fatalf("installed %d webhook configurations, want 1", len(op.Webhooks))
		}
		name := op.Webhooks[0].GetName()
		_, port, _ := net.SplitHostPort(op.WebhookAddr)
		if want := "validating-webhook-configuration-" + port; name != want {
			t.Errorf("installed %s, want %s", name, want)
		}
		for _, want := range []string{"--webhook-host=127.0.0.1", "--webhook-port=" + port, "--webhook-cert-dir=" + op.WebhookCerts.Dir} {
			if !slices.Contains(op.Args, want) {
				t.Errorf("args %q lack %s", op.Args, want)
			}
		}

		err = refused("team-a", "in-the-watched-namespace")
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), fmt.Sprintf("refused by the fake operator (pid %d)", op.PID())) {
			t.Errorf("a labelled ConfigMap in the watched namespace: %v, want the operator's refusal", err)
		}
		if err := refused("team-b", "elsewhere"); err != nil {
			t.Errorf("a labelled ConfigMap in a namespace the operator does not watch: %v, want no webhook called", err)
		}

		if err := stop(); err != nil {
			t.Fatal(err)
		}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, vwc); !apierrors.IsNotFound(err) {
			t.Errorf("after Stop, get %s: %v, want NotFound", name, err)
		}
		if _, err := os.Stat(op.WebhookCerts.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Stop, the certificate directory: %v, want it gone", err)
		}
		if err := op.CheckStopped(); err != nil {
			t.Error(err)
		}
		// The API server lets go of the configuration a moment after it is deleted; until then a call
		// would reach a stopped process.
		if err := eventually(t, func() error { return refused("team-a", "after-stop") }); err != nil {
			t.Errorf("after Stop, a labelled ConfigMap: %v", err)
		}
	})

	t.Run("StartOperator with a missing manifests file", func(t *testing.T) {
		o := fakeOptions(t, "")
		o.Kubeconfig = c.KubeconfigPath()
		o.WebhookManifests = filepath.Join(t.TempDir(), "absent.yaml")
		if op, err := StartOperator(t.Context(), o); err == nil || !errors.Is(err, os.ErrNotExist) {
			if op != nil {
				_ = op.Stop()
			}
			t.Errorf("err = %v, want the missing file", err)
		}
	})
}

// serveTLS serves h at path with certs on a free 127.0.0.1 port until the test ends.
func serveTLS(t *testing.T, certs *WebhookCerts, path string, h http.Handler) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(certs.Dir, WebhookCertFile), filepath.Join(certs.Dir, WebhookKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(path, h)
	// The controls' failed handshakes are expected: keep them out of the test's output.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// installFails installs objs pointed at addr with ca and wants the wait for the probe to fail saying
// want; it then removes them. The probe can never pass here, so the bound only ends the wait.
func installFails(t *testing.T, c client.Client, objs []client.Object, addr string, ca []byte, suffix, want string) {
	t.Helper()
	local, err := LocalWebhookConfigurations(objs, addr, ca, suffix, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Only the probe: the configuration's own webhooks would refuse the other subtests' ConfigMaps for as
	// long as the API server still holds it after it is deleted.
	for _, o := range local {
		v := o.(*admissionregistrationv1.ValidatingWebhookConfiguration)
		v.Webhooks = v.Webhooks[len(v.Webhooks)-1:]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err = InstallWebhooks(ctx, c, local)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("InstallWebhooks = %v, want it to fail with %q", err, want)
	}
	if err := UninstallWebhooks(t.Context(), c, local); err != nil {
		t.Fatal(err)
	}
}

// eventually retries f every 100ms until it succeeds, for at most 30s (a bound on a wait for the API
// server's webhook informer, not a measurement), and returns its last error.
func eventually(t *testing.T, f func() error) error {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestStartOperatorNoWebhookFlags(t *testing.T) {
	o := fakeOptions(t, "")
	o.NoWebhookFlags = true
	op, err := StartOperator(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Stop() })
	for _, a := range op.Args {
		if strings.HasPrefix(a, "--webhook-") {
			t.Errorf("argument %s given with NoWebhookFlags", a)
		}
	}
	if op.WebhookAddr != "" || op.WebhookCerts != nil || len(op.Addresses()) != 2 {
		t.Errorf("WebhookAddr %q, WebhookCerts %v, Addresses %v: want no webhook server", op.WebhookAddr, op.WebhookCerts, op.Addresses())
	}

	o = fakeOptions(t, "")
	o.NoWebhookFlags, o.WebhookManifests = true, writeFile(t, manifestsYAML)
	if op, err := StartOperator(t.Context(), o); err == nil || !strings.Contains(err.Error(), "NoWebhookFlags") {
		if op != nil {
			_ = op.Stop()
		}
		t.Errorf("NoWebhookFlags with WebhookManifests: %v, want an error", err)
	}
}

func TestStartOperatorServesWebhooks(t *testing.T) {
	op, stop := startOperator(t, fakeOptions(t, ""))
	// The fake operator serves fakeWebhookPath with the certificate StartOperator wrote: a client that
	// trusts only the CA reaches it at WebhookAddr.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(op.WebhookCerts.CA)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","namespace":"ns","name":"n","object":{}}}`
	resp, err := hc.Post("https://"+op.WebhookAddr+fakeWebhookPath, "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatalf("the webhook server at %s with the CA: %v", op.WebhookAddr, err)
	}
	var got admissionv1.AdmissionReview
	err = json.NewDecoder(resp.Body).Decode(&got)
	_ = resp.Body.Close()
	if err != nil || got.Response == nil || got.Response.UID != "u-1" || got.Response.Allowed {
		t.Errorf("review answer %+v (%v), want a refusal of u-1", got.Response, err)
	}
	if _, err := os.Stat(filepath.Join(op.WebhookCerts.Dir, WebhookCertFile)); err != nil {
		t.Error(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(op.WebhookCerts.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop, the certificate directory: %v, want it gone", err)
	}
	if err := op.CheckStopped(); err != nil {
		t.Error(err)
	}
}
