package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/ergo/ergotest"
	"github.com/platform-operator/platform-operator/internal/scheme"
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
