package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/irc/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

func fakeScenario(name string) Scenario {
	return Scenario{Name: name, Title: "the " + name + " API", Follow: ircv1.GroupVersion.WithKind("ErgoNetwork"),
		Show: func(context.Context, *Env, client.Object) {}}
}

func TestSelectScenarios(t *testing.T) {
	all := []Scenario{fakeScenario("catalyst"), fakeScenario("iot"), fakeScenario("irc")}
	tests := []struct {
		only    string
		want    []string
		wantErr []string // substrings of the error
	}{
		{only: "", want: []string{"catalyst", "iot", "irc"}},
		{only: " , ", want: []string{"catalyst", "iot", "irc"}},
		{only: "irc", want: []string{"irc"}},
		{only: "irc,catalyst", want: []string{"catalyst", "irc"}}, // registry order, not the flag's
		{only: " iot , irc,", want: []string{"iot", "irc"}},
		{only: "irc,irc", want: []string{"irc"}},
		{only: "ircd", wantErr: []string{"no scenario ircd", "catalyst, iot, irc"}},
		{only: "irc,zz,aa", wantErr: []string{"no scenario aa, zz;", "catalyst, iot, irc"}},
		{only: "IRC", wantErr: []string{"no scenario IRC"}},
	}
	for _, tt := range tests {
		t.Run(tt.only, func(t *testing.T) {
			got, err := selectScenarios(all, tt.only)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("selected %q, want an error", names(got))
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("selected %q, want %q", names(got), tt.want)
			}
		})
	}
}

func TestCheckScenarios(t *testing.T) {
	noTitle := fakeScenario("b")
	noTitle.Title = " "
	noFollow := fakeScenario("c")
	noFollow.Follow.Kind = ""
	noShow := fakeScenario("d")
	noShow.Show = nil
	tests := []struct {
		name string
		all  []Scenario
		want string // "" for no error
	}{
		{"fine", []Scenario{fakeScenario("a"), fakeScenario("b-2")}, ""},
		{"twice", []Scenario{fakeScenario("a"), fakeScenario("a")}, `"a" is registered twice`},
		{"empty name", []Scenario{fakeScenario("")}, `scenario "": the name must match`},
		{"comma in the name", []Scenario{fakeScenario("a,b")}, "the name must match"},
		{"upper case", []Scenario{fakeScenario("Irc")}, "the name must match"},
		{"no title", []Scenario{noTitle}, `"b" has no title`},
		{"no kind to follow", []Scenario{noFollow}, `"c" follows no kind`},
		{"nothing to show", []Scenario{noShow}, `"d" shows nothing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkScenarios(tt.all)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestRegistry checks what every registered scenario promises: a unique name -only can select, a title,
// samples that exist and hold the kind it follows, a kind the demo's client can read.
func TestRegistry(t *testing.T) {
	if len(registry) == 0 {
		t.Fatal("no scenario is registered")
	}
	if err := checkScenarios(registry); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names(registry), "irc") {
		t.Errorf("no irc scenario among %q", names(registry))
	}
	root := testutil.RepoRoot(t)
	for _, s := range registry {
		t.Run(s.Name, func(t *testing.T) {
			if s.Operator != nil { // Objects may name what it starts
				_, stop, err := s.Operator(t.Context(), t.TempDir())
				if stop != nil {
					t.Cleanup(stop)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := scheme.Scheme.New(s.Follow); err != nil {
				t.Errorf("the demo's client cannot read %s: %v", s.Follow, err)
			}
			follows := false
			for _, f := range s.Samples {
				objs, err := readObjects(filepath.Join(root, samplesDir, f))
				if err != nil {
					t.Fatal(err)
				}
				if len(objs) == 0 {
					t.Errorf("sample %s holds no object", f)
				}
				for _, u := range objs {
					follows = follows || u.GroupVersionKind() == s.Follow
				}
			}
			if s.Objects != nil {
				for _, o := range s.Objects(namespace) {
					u, err := toUnstructured(o, scheme.Scheme)
					if err != nil {
						t.Fatal(err)
					}
					follows = follows || u.GroupVersionKind() == s.Follow
				}
			}
			if !follows {
				t.Errorf("nothing scenario %s applies is a %s", s.Name, s.Follow)
			}
		})
	}
}

func TestIRCSamplesAreTheKustomizations(t *testing.T) {
	// The irc scenario names its samples; the kustomization lists every kind's sample for OLM. A sample
	// added there for ErgoNetwork but not here would silently be left out of the demo.
	root := testutil.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, samplesDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	applies := func(f string) bool {
		return slices.ContainsFunc(registry, func(s Scenario) bool { return slices.Contains(s.Samples, f) })
	}
	for line := range strings.Lines(string(data)) {
		f, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if ok && strings.HasPrefix(f, "irc_") && !applies(f) {
			t.Errorf("kustomization lists %s, no scenario (irc, soju) applies it", f)
		}
	}
}

func TestConditionChecks(t *testing.T) {
	en := ergotest.MinimalNetwork("ns", "net")
	en.Generation = 2
	ready := ConditionTrue(ircv1.ConditionReady)
	set := func(status metav1.ConditionStatus, observed int64) {
		en.Status.ObservedGeneration = observed
		en.Status.Conditions = []metav1.Condition{{Type: ircv1.ConditionReady, Status: status, Reason: "Waiting", Message: "for the pod"}}
	}
	tests := []struct {
		name      string
		prepare   func()
		check     func(client.Object) (bool, string)
		wantDone  bool
		wantState string
	}{
		{"no status: not reconciled", func() { en.Status = ircv1.ErgoNetworkStatus{} }, Reconciled, false,
			"status.observedGeneration 0, metadata.generation 2"},
		{"no status: no condition", func() {}, ready, false, "no Ready condition"},
		{"False", func() { set(metav1.ConditionFalse, 2) }, ready, false, "Ready=False (Waiting: for the pod)"},
		{"reconciled", func() {}, Reconciled, true, "status.observedGeneration 2 = metadata.generation"},
		{"True for an old generation", func() { set(metav1.ConditionTrue, 1) }, ready, false,
			"Ready=True for generation 1, metadata.generation is 2"},
		{"True", func() { set(metav1.ConditionTrue, 2) }, ready, true, "Ready=True"},
		{"another condition", func() {}, ConditionTrue(ircv1.ConditionDeployment), false, "no DeploymentAvailable condition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.prepare()
			done, state := tt.check(en)
			if done != tt.wantDone || state != tt.wantState {
				t.Errorf("= %v, %q; want %v, %q", done, state, tt.wantDone, tt.wantState)
			}
		})
	}
	if got := Conditions(en); len(got) != 1 || got[0].Type != ircv1.ConditionReady {
		t.Errorf("Conditions = %+v", got)
	}
}

func TestToUnstructured(t *testing.T) {
	en := ergotest.FullNetwork("ns", "net", "net.example")
	en.ResourceVersion = "7"
	en.Status.NetworkName = "set by the operator"
	u, err := toUnstructured(en, scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != ircv1.GroupVersion.String() || u.GetKind() != "ErgoNetwork" {
		t.Errorf("apiVersion %q, kind %q", u.GetAPIVersion(), u.GetKind())
	}
	for _, path := range [][]string{{"status"}, {"metadata", "resourceVersion"}, {"metadata", "creationTimestamp"}} {
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...); found {
			t.Errorf("%s is sent: %v", strings.Join(path, "."), u.Object)
		}
	}
	if host, _, _ := unstructured.NestedString(u.Object, "spec", "hostname"); host != "net.example" {
		t.Errorf("spec.hostname = %q", host)
	}
}

func TestPrefixWriter(t *testing.T) {
	var b strings.Builder
	w := &prefixWriter{w: &b, prefix: "op | "}
	for _, s := range []string{"one\ntw", "o\n", "", "three\nfour"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "op | one\nop | two\nop | three\n"; b.String() != want {
		t.Errorf("wrote %q, want %q (an unfinished line waits for its end)", b.String(), want)
	}
}

func TestStartBeside(t *testing.T) {
	var log []string
	hook := func(name string, args []string, err error) func(context.Context, string) ([]string, func(), error) {
		return func(_ context.Context, dir string) ([]string, func(), error) {
			if fi, statErr := os.Stat(dir); statErr != nil || !fi.IsDir() {
				t.Errorf("%s: dir %q is not a directory: %v", name, dir, statErr)
			}
			log = append(log, "start "+name)
			return args, func() { log = append(log, "stop "+name) }, err
		}
	}
	a, b, c, none := fakeScenario("a"), fakeScenario("b"), fakeScenario("c"), fakeScenario("none")
	a.Operator = hook("a", []string{"--x=1"}, nil)
	b.Operator = hook("b", []string{"--y=2", "--z"}, nil)
	c.Operator = hook("c", nil, errors.New("port taken"))
	p := Printer{w: io.Discard}

	args, stop, err := startBeside(t.Context(), p, []Scenario{a, none, b})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--x=1", "--y=2", "--z"}; !slices.Equal(args, want) {
		t.Errorf("args %q, want %q", args, want)
	}
	stop()
	if want := []string{"start a", "start b", "stop b", "stop a"}; !slices.Equal(log, want) {
		t.Errorf("calls %q, want %q (stopped in the reverse order)", log, want)
	}

	log = nil
	args, stop, err = startBeside(t.Context(), p, []Scenario{a, c, b})
	if err == nil || !strings.Contains(err.Error(), "scenario c: port taken") {
		t.Errorf("error %v, want one naming scenario c", err)
	}
	stop() // a no-op: what started is stopped already
	if want := []string{"start a", "start c", "stop c", "stop a"}; args != nil || !slices.Equal(log, want) {
		t.Errorf("args %q, calls %q; want none and %q (b never starts, a and c are stopped)", args, log, want)
	}
}

// TestCatalystServers starts what the catalyst scenario runs beside the cluster and checks that the
// objects it applies name it: the Project the registry (which has the commit's image) and the https
// repository (whose CA the operator is told to trust), the Environment the commit.
func TestCatalystServers(t *testing.T) {
	dir := t.TempDir()
	args, stop, err := startCatalystServers(t.Context(), dir)
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	l := catalystLocal
	ca := filepath.Join(dir, "git-ca.pem")
	if want := []string{"--catalyst-git-ca-file=" + ca, "--catalyst-git-hosts=127.0.0.1", "--catalyst-registries=127.0.0.1",
		"--catalyst-allowed-domains=preview.example.com", "--catalyst-allowed-cluster-issuers=" + catalysttest.Issuer}; !slices.Equal(args, want) {
		t.Errorf("args %q, want %q", args, want)
	}
	pem, err := os.ReadFile(ca)
	if err != nil || !bytes.Equal(pem, l.git.CABundle()) {
		t.Errorf("%s does not hold the Git server's CA (%v)", ca, err)
	}

	objs := catalystObjects(namespace)
	if len(objs) != 2 {
		t.Fatalf("%d objects, want the Project and the Environment", len(objs))
	}
	p, ok1 := objs[0].(*catalystv1.Project)
	env, ok2 := objs[1].(*catalystv1.Environment)
	if !ok1 || !ok2 {
		t.Fatalf("objects %T, %T", objs[0], objs[1])
	}
	if p.Namespace != "my-team" || p.Name != "my-project" || env.Namespace != "my-team-my-project" || env.Name != "pr-123" ||
		env.Spec.ProjectRef.Name != p.Name {
		t.Errorf("Project %s/%s, Environment %s/%s of %s: not the samples' names", p.Namespace, p.Name, env.Namespace,
			env.Name, env.Spec.ProjectRef.Name)
	}
	if !catalyst.FullCommit(env.Spec.Source.CommitSHA) || env.Spec.Source.CommitSHA != l.commit {
		t.Errorf("Environment at commit %q, want the repository's %q", env.Spec.Source.CommitSHA, l.commit)
	}
	if p.Spec.Build == nil || p.Spec.Build.Registry != l.registry.Host {
		t.Errorf("spec.build %+v, want the registry %s", p.Spec.Build, l.registry.Host)
	}
	if p.Spec.Deployment.Type != catalystv1.DeploymentManifest || p.Spec.Deployment.Path != "deploy" {
		t.Errorf("spec.deployment %+v", p.Spec.Deployment)
	}

	// The image the operator looks for is there, as pushed.
	image := catalyst.ImageReference(p, env.Spec.Source.CommitSHA)
	digest, err := crane.Digest(image, crane.Insecure)
	if err != nil || digest != l.digest {
		t.Errorf("registry: %s has digest %q (%v), want %q", image, digest, err, l.digest)
	}

	// The repository is served over https with that CA, and holds the commit with the app's manifests.
	u, err := url.Parse(p.Spec.Source.RepositoryURL)
	if err != nil || u.Scheme != "https" || u.Hostname() != "127.0.0.1" {
		t.Fatalf("repositoryUrl %q (%v): want https on 127.0.0.1", p.Spec.Source.RepositoryURL, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the CA file")
	}
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := httpc.Get(p.Spec.Source.RepositoryURL + "/info/refs?service=git-upload-pack")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	refs, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(refs), l.commit+" refs/heads/main") {
		t.Errorf("GET info/refs: %s, %v: %q does not advertise main at %s", resp.Status, err, refs, l.commit)
	}
	if catalysttest.AppImagePlaceholder != render.ImagePlaceholder {
		t.Errorf("the app's Deployment uses image %s, the operator replaces %s", catalysttest.AppImagePlaceholder, render.ImagePlaceholder)
	}

	stop()
	stop = nil
	if catalystLocal != nil {
		t.Error("catalystLocal is still set after stop")
	}
	if _, err := crane.Digest(image, crane.Insecure); err == nil {
		t.Error("the registry still answers after stop")
	}
}
