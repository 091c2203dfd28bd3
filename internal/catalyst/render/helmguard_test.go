package render_test

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"

	"github.com/platform-operator/platform-operator/internal/catalyst/render"
)

// recorder is Helm's fake KubeClient with a Build that returns the manifest's objects (the fake's returns
// none), as Helm's real client does, and a record of what Helm sends.
type recorder struct {
	*fake.PrintingKubeClient
	mu   sync.Mutex
	sent []string
}

func newRecorder() *recorder {
	return &recorder{PrintingKubeClient: &fake.PrintingKubeClient{Out: io.Discard, LogOutput: io.Discard}}
}

func (r *recorder) Build(reader io.Reader, _ bool) (kube.ResourceList, error) {
	data, err := io.ReadAll(reader)
	if err != nil {
		return nil, err
	}
	objs, err := render.Parse(data)
	if err != nil {
		return nil, err
	}
	list := kube.ResourceList{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" {
			// Helm's builder defaults the namespace to the release's.
			ns = "env-ns"
		}
		gvk := o.GroupVersionKind()
		list = append(list, &resource.Info{Name: o.GetName(), Namespace: ns, Object: o, Client: notFound,
			Mapping: &meta.RESTMapping{GroupVersionKind: gvk, Scope: meta.RESTScopeNamespace,
				Resource: gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind) + "s")}})
	}
	return list, nil
}

// notFound is the REST client of the recorder's objects: Helm's install looks each up to refuse taking
// over an existing one, and finds none.
var notFound = &restfake.RESTClient{
	NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
	Client: restfake.CreateHTTPClient(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))}, nil
	}),
}

func (r *recorder) record(verb string, list kube.ResourceList) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range list {
		r.sent = append(r.sent, verb+" "+i.Mapping.GroupVersionKind.Kind+" "+i.Namespace+"/"+i.Name)
	}
}

func (r *recorder) Create(list kube.ResourceList) (*kube.Result, error) {
	r.record("create", list)
	return &kube.Result{Created: list}, nil
}

func (r *recorder) Update(_, target kube.ResourceList, _ bool) (*kube.Result, error) {
	r.record("update", target)
	return &kube.Result{Updated: target}, nil
}

func (r *recorder) Delete(list kube.ResourceList) (*kube.Result, []error) {
	r.record("delete", list)
	return &kube.Result{Deleted: list}, nil
}

func (r *recorder) Sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent)
}

// helmEnv is a release's storage and the recorder, shared by the actions of one test.
type helmEnv struct {
	releases *storage.Storage
	rec      *recorder
}

func newHelmEnv() *helmEnv {
	return &helmEnv{releases: storage.Init(driver.NewMemory()), rec: newRecorder()}
}

// config is an action configuration whose KubeClient is the recorder guarded by p.
func (h *helmEnv) config(p render.Policy) *action.Configuration {
	return &action.Configuration{
		Releases:     h.releases,
		KubeClient:   render.GuardKubeClient(h.rec, p),
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
}

func (h *helmEnv) install(t *testing.T, cfg *action.Configuration, ch *chart.Chart) error {
	t.Helper()
	i := action.NewInstall(cfg)
	i.ReleaseName, i.Namespace = "web", "env-ns"
	_, err := i.Run(ch, nil)
	return err
}

func (h *helmEnv) upgrade(t *testing.T, cfg *action.Configuration, ch *chart.Chart) error {
	t.Helper()
	u := action.NewUpgrade(cfg)
	u.Namespace = "env-ns"
	_, err := u.Run("web", ch, nil)
	return err
}

// testChart is a chart of the templates (by file name under templates/) and other files (by path).
func testChart(templates map[string]string, files map[string]string) *chart.Chart {
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "t", Version: "0.1.0"}}
	for name, data := range templates {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + name, Data: []byte(data)})
	}
	for name, data := range files {
		ch.Files = append(ch.Files, &chart.File{Name: name, Data: []byte(data)})
	}
	sort.Slice(ch.Templates, func(i, j int) bool { return ch.Templates[i].Name < ch.Templates[j].Name })
	return ch
}

const appConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {a: '1'}\n"

// hookChart creates ConfigMap app and, in a pre-install hook, ConfigMap hook in namespace ns.
func hookChart(ns string) *chart.Chart {
	return testChart(map[string]string{
		"app.yaml": appConfigMap,
		"hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: hook
  namespace: ` + ns + `
  annotations:
    helm.sh/hook: pre-install
data: {}
`,
	}, nil)
}

func hasNamespace(sent []string, ns string) bool {
	return slices.ContainsFunc(sent, func(s string) bool { return strings.Contains(s, " "+ns+"/") })
}

func TestGuardKubeClientInstallHooks(t *testing.T) {
	t.Run("a hook in the release namespace installs", func(t *testing.T) {
		h := newHelmEnv()
		cfg := h.config(policy)
		if err := h.install(t, cfg, hookChart("env-ns")); err != nil {
			t.Fatalf("install: %v", err)
		}
		want := []string{"delete ConfigMap env-ns/hook", "create ConfigMap env-ns/hook", "create ConfigMap env-ns/app"}
		if got := h.rec.Sent(); !slices.Equal(got, want) {
			t.Errorf("sent %q, want %q", got, want)
		}
		if r := render.Refusals(cfg.KubeClient); len(r) != 0 {
			t.Errorf("refusals %q", r)
		}
	})
	t.Run("a hook in kube-system is refused before anything is sent", func(t *testing.T) {
		h := newHelmEnv()
		cfg := h.config(policy)
		err := h.install(t, cfg, hookChart("kube-system"))
		want := "ConfigMap kube-system/hook (namespace kube-system is not the environment's)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("install error = %v, want one naming %q", err, want)
		}
		if got := render.Refusals(cfg.KubeClient); !slices.Equal(got, []string{want}) {
			t.Errorf("refusals = %q", got)
		}
		// Helm deletes a hook's objects before creating them: that delete must not reach kube-system
		// either.
		if got := h.rec.Sent(); len(got) != 0 {
			t.Errorf("sent %q, want nothing", got)
		}
	})
}

func TestGuardKubeClientInstallCRDs(t *testing.T) {
	h := newHelmEnv()
	cfg := h.config(policy)
	ch := testChart(map[string]string{"app.yaml": appConfigMap}, map[string]string{
		"crds/widgets.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n",
	})
	err := h.install(t, cfg, ch)
	var refused *render.RefusedError
	if !errors.As(err, &refused) || !slices.Equal(refused.Objects, []string{"CustomResourceDefinition widgets.example.com (cluster-scoped)"}) {
		t.Fatalf("install error = %v, want the CRD refused", err)
	}
	if got := h.rec.Sent(); len(got) != 0 {
		t.Errorf("sent %q, want nothing", got)
	}
}

// escalating renders a RoleBinding of cluster-admin on upgrades only.
var escalating = testChart(map[string]string{
	"app.yaml": appConfigMap,
	"binding.yaml": `{{- if .Release.IsUpgrade }}
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: escalate}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: env-ns}]
{{- end }}
`,
}, nil)

func TestGuardKubeClientUpgrade(t *testing.T) {
	h := newHelmEnv()
	cfg := h.config(policy)
	if err := h.install(t, cfg, escalating); err != nil {
		t.Fatalf("install (no RoleBinding yet): %v", err)
	}
	err := h.upgrade(t, cfg, escalating)
	var refused *render.RefusedError
	want := "RoleBinding env-ns/escalate (roleRef names ClusterRole cluster-admin; bind a Role of the namespace)"
	if !errors.As(err, &refused) || !slices.Equal(refused.Objects, []string{want}) {
		t.Fatalf("upgrade error = %v, want %q", err, want)
	}
	if got := h.rec.Sent(); !slices.Equal(got, []string{"create ConfigMap env-ns/app"}) {
		t.Errorf("sent %q, want only the install's ConfigMap", got)
	}

	// Positive control: the same upgrade of a chart that does not escalate goes through.
	if err := h.upgrade(t, cfg, testChart(map[string]string{"app.yaml": appConfigMap}, nil)); err != nil {
		t.Fatalf("upgrade without the RoleBinding: %v", err)
	}
	if got := h.rec.Sent(); !slices.Contains(got, "update ConfigMap env-ns/app") {
		t.Errorf("sent %q, want the ConfigMap updated", got)
	}
}

// TestGuardKubeClientOlderRevision is an upgrade away from a revision that a rule now refuses (here a
// ClusterIssuer the administrator withdrew): it goes through, while a rollback to that revision is
// refused.
func TestGuardKubeClientOlderRevision(t *testing.T) {
	h := newHelmEnv()
	then := policy
	then.ClusterIssuers = []string{"old-ca"}
	withCert := testChart(map[string]string{
		"app.yaml":  appConfigMap,
		"cert.yaml": "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web}\nspec: {dnsNames: [env-ns.preview.test], issuerRef: {kind: ClusterIssuer, name: old-ca}}\n",
	}, nil)
	if err := h.install(t, h.config(then), withCert); err != nil {
		t.Fatalf("install under the old policy: %v", err)
	}
	now := h.config(policy)
	if err := h.upgrade(t, now, testChart(map[string]string{"app.yaml": appConfigMap}, nil)); err != nil {
		t.Fatalf("upgrade away from the refused revision: %v", err)
	}
	rollback := action.NewRollback(now)
	rollback.Version = 1
	err := rollback.Run("web")
	want := "Certificate env-ns/web (ClusterIssuer old-ca is not one the environment may use (letsencrypt))"
	var refused *render.RefusedError
	if !errors.As(err, &refused) || !slices.Equal(refused.Objects, []string{want}) {
		t.Fatalf("rollback error = %v, want %q", err, want)
	}
	sent := h.rec.Sent()
	if n := len(slices.DeleteFunc(slices.Clone(sent), func(s string) bool { return !strings.Contains(s, "Certificate") })); n != 1 {
		t.Errorf("sent %q: want the Certificate sent once, by the install under the old policy", sent)
	}
}

// TestGuardKubeClientForgedRelease is a release record (a Secret of the namespace) forged to hold an
// object of kube-system: the upgrade, which would delete what the current revision holds and the new one
// does not, is refused.
func TestGuardKubeClientForgedRelease(t *testing.T) {
	h := newHelmEnv()
	ch := testChart(map[string]string{"app.yaml": appConfigMap}, nil)
	forged := &release.Release{Name: "web", Namespace: "env-ns", Version: 1, Chart: ch,
		Info:     &release.Info{Status: release.StatusDeployed},
		Manifest: "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: coredns, namespace: kube-system}\n"}
	if err := h.releases.Create(forged); err != nil {
		t.Fatal(err)
	}
	err := h.upgrade(t, h.config(policy), ch)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap kube-system/coredns (namespace kube-system is not the environment's)") {
		t.Fatalf("upgrade error = %v, want the forged object refused", err)
	}
	if got := h.rec.Sent(); hasNamespace(got, "kube-system") || len(got) != 0 {
		t.Errorf("sent %q, want nothing", got)
	}
}

// TestGuardKubeClientSend checks what is sent even when Build let it through: Create and Update refuse
// every rule on what they send (an update's target, not the revision it replaces), Delete the namespace
// boundary.
func TestGuardKubeClientSend(t *testing.T) {
	rec := newRecorder()
	kc := render.GuardKubeClient(rec, policy)
	build := func(y string) kube.ResourceList {
		list, err := rec.Build(strings.NewReader(y), false)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	lb := build("apiVersion: v1\nkind: Service\nmetadata: {name: app}\nspec: {type: LoadBalancer}\n")
	clean := build("apiVersion: v1\nkind: Service\nmetadata: {name: app}\nspec: {type: ClusterIP}\n")
	other := build("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: kube-system}\n")
	if _, err := kc.Create(lb); err == nil {
		t.Error("Create of a LoadBalancer Service went through")
	}
	if _, err := kc.Update(clean, lb, false); err == nil {
		t.Error("Update to a LoadBalancer Service went through")
	}
	if _, err := kc.Update(lb, clean, false); err != nil {
		t.Errorf("Update away from a LoadBalancer Service: %v", err)
	}
	if _, err := kc.(kube.InterfaceThreeWayMerge).UpdateThreeWayMerge(clean, lb, false); err == nil {
		t.Error("UpdateThreeWayMerge to a LoadBalancer Service went through")
	}
	if _, errs := kc.Delete(other); len(errs) == 0 {
		t.Error("Delete in kube-system went through")
	}
	if _, errs := kc.Delete(lb); len(errs) != 0 {
		t.Errorf("Delete of a LoadBalancer Service of the namespace: %v", errs)
	}
	if _, err := kc.Build(strings.NewReader("apiVersion: v1\nkind: Service\nmetadata: {name: app}\nspec: {type: LoadBalancer}\n"), true); err == nil {
		t.Error("Build to create a LoadBalancer Service went through")
	}
	want := []string{"update Service env-ns/app", "delete Service env-ns/app"}
	if got := rec.Sent(); !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}
