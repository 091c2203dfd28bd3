package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	ircv1 "github.com/platform-operator/platform-operator/api/irc/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/irc/ergo"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// namedWorkload is a Workload that only has a name, for the selection tests.
type namedWorkload struct {
	Workload
	name string
}

func (w namedWorkload) Info() Info { return Info{Name: w.name} }

func TestSelectWorkloads(t *testing.T) {
	known := map[string]Workload{"irc": namedWorkload{name: "irc"}, "soju": namedWorkload{name: "soju"}, "iot": namedWorkload{name: "iot"}}
	tests := []struct {
		spec    string
		want    string // names, comma-separated
		wantErr string
	}{
		{spec: "", want: "iot,irc,soju"},
		{spec: "all", want: "iot,irc,soju"},
		{spec: " all ", want: "iot,irc,soju"},
		{spec: "irc", want: "irc"},
		{spec: "soju,irc", want: "soju,irc"},
		{spec: " irc , soju ,", want: "irc,soju"},
		{spec: "irc,irc", want: "irc"},
		{spec: "catalyst", wantErr: `unknown workload "catalyst" (known: iot, irc, soju, or all)`},
		{spec: "irc,IRC", wantErr: `unknown workload "IRC"`},
		{spec: ",", wantErr: "no workload (known: iot, irc, soju, or all)"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := selectWorkloads(tt.spec, known)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			if names := strings.Join(infoNames(got), ","); names != tt.want {
				t.Errorf("selectWorkloads(%q) = %s, want %s", tt.spec, names, tt.want)
			}
		})
	}
}

func infoNames(ws []Workload) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Info().Name
	}
	return out
}

func TestCheckOut(t *testing.T) {
	known := map[string]Workload{"irc": namedWorkload{name: "irc"}, "soju": namedWorkload{name: "soju"}}
	all, _ := selectWorkloads("all", known)
	irc, _ := selectWorkloads("irc", known)
	tests := []struct {
		name     string
		out      string
		selected []Workload
		wantErr  string
	}{
		{"every workload into the document", "docs/performance.md", all, ""},
		{"some workloads, printed only", "", irc, ""},
		{"some workloads into the document", "docs/performance.md", irc, "-workloads leaves out soju"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOut(tt.out, tt.selected, known)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("checkOut = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestRegisteredWorkloads holds every workload to what the harness and the report rely on.
func TestRegisteredWorkloads(t *testing.T) {
	if len(registered()) == 0 {
		t.Fatal("no workload registered")
	}
	for _, w := range registered() {
		info := w.Info()
		t.Run(info.Name, func(t *testing.T) {
			for field, v := range map[string]string{"Kind": info.Kind, "Resource": info.Resource, "Noun": info.Noun, "Nouns": info.Nouns,
				"Shape": info.Shape, "EditDoes": info.EditDoes, "EditWritten": info.EditWritten, "EditStages": info.EditStages} {
				if v == "" {
					t.Errorf("Info.%s is empty", field)
				}
			}
			if len(info.Controllers) == 0 || len(info.Children) == 0 || info.StatusWrites < 1 {
				t.Errorf("controllers %v, children %v, status writes %d: the bench cannot count or check reconciles",
					info.Controllers, info.Children, info.StatusWrites)
			}
			if w.ObjectName(0) == w.ObjectName(1) {
				t.Errorf("objects 0 and 1 are both named %q", w.ObjectName(0))
			}
			watched := map[string]bool{}
			for _, watch := range w.NewObserver().Watches() {
				watched[kindOf(t, watch.Object)] = true
			}
			for _, k := range w.Kinds() {
				if k.GetNamespace() != benchNamespace && k.GetNamespace() != "" {
					t.Errorf("%T %s is in namespace %q, not the bench's", k, k.GetName(), k.GetNamespace())
				}
			}
			for _, child := range info.Children {
				if !watched[child] {
					t.Errorf("child kind %s is not watched (watched: %v)", child, watched)
				}
			}
			if !watched[info.Kind] {
				t.Errorf("%s itself is not watched", info.Kind)
			}
		})
	}
}

func kindOf(t *testing.T, o client.Object) string {
	gvk, err := apiutil.GVKForObject(o, scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	return gvk.Kind
}

func TestPara(t *testing.T) {
	long := strings.Repeat("word ", 40)
	tests := []struct{ in, want string }{
		{"", "\n"},
		{"  one   two\nthree ", "one two three\n"},
		{long, strings.TrimSpace(strings.Repeat("word ", 22)) + "\n" + strings.TrimSpace(strings.Repeat("word ", 18)) + "\n"},
	}
	for _, tt := range tests {
		if got := para(tt.in); got != tt.want {
			t.Errorf("para(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
		}
	}
}

// TestIRCObserver walks one network through convergence and one edit, as the watch would show them.
func TestIRCObserver(t *testing.T) {
	w := ircWorkload{}
	obs := w.NewObserver()
	net := w.network(benchNamespace, 7)
	net.Generation = 1
	name := net.Name
	config := func(networkName string) *corev1.ConfigMap {
		n := net.DeepCopy()
		n.Spec.NetworkName = networkName
		rendered, err := ergo.RenderConfig(ergo.BuildConfig(n, true))
		if err != nil {
			t.Fatal(err)
		}
		return ergo.ConfigMap(n, rendered)
	}
	deployment := func(digest string) *appsv1.Deployment {
		return ergo.Deployment(net, ergo.Options{Image: ergoImage}, digest)
	}
	steps := []struct {
		what string
		obj  client.Object
		edit int // > 0: StartEdit(name, edit) before the event
		want Progress
	}{
		{what: "network, no status", obj: net, want: Progress{Name: name}},
		{what: "ConfigMap", obj: config("Bench"), want: Progress{Name: name}},
		{what: "PVC", obj: ergo.PVC(net), want: Progress{Name: name}},
		{what: "Deployment", obj: deployment("d1"), want: Progress{Name: name}},
		{what: "Service", obj: ergo.Service(net), want: Progress{Name: name}},
		{what: "Certificate", obj: ergo.Certificate(net), want: Progress{Name: name}},
		{what: "Route: every child, status still behind", obj: ergo.Route(net), want: Progress{Name: name}},
		{what: "status observed", obj: withObserved(net, 1), want: Progress{Name: name, Converged: true}},
		{what: "edit sent: spec ahead of status", obj: withGeneration(net, 2, 1), edit: 3, want: Progress{Name: name}},
		{what: "config written", obj: config(churnMarker(3)), want: Progress{Name: name, Written: true}},
		{what: "Deployment rolled", obj: deployment("d2"), want: Progress{Name: name, Written: true, Applied: true}},
		{what: "status caught up", obj: withGeneration(net, 2, 2), want: Progress{Name: name, Converged: true, Written: true, Applied: true}},
		{what: "next edit", obj: withGeneration(net, 3, 2), edit: 4, want: Progress{Name: name}},
		{what: "someone else's ConfigMap", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: benchNamespace}}, want: Progress{}},
	}
	for _, s := range steps {
		if s.edit > 0 {
			obs.StartEdit(name, s.edit)
		}
		if got := obs.Observe(s.obj); got != s.want {
			t.Errorf("%s: %+v, want %+v", s.what, got, s.want)
		}
	}
}

func withObserved(n *ircv1.ErgoNetwork, observed int64) *ircv1.ErgoNetwork {
	return withGeneration(n, n.Generation, observed)
}

func withGeneration(n *ircv1.ErgoNetwork, generation, observed int64) *ircv1.ErgoNetwork {
	n = n.DeepCopy()
	n.Generation, n.Status.ObservedGeneration = generation, observed
	return n
}

func TestTrimsStartPages(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--kube-api-qps=200"}, true},
		{[]string{"--trim-start-pages=false"}, false},
		{[]string{"-trim-start-pages=false"}, false},
		{[]string{"--trim-start-pages=false", "--trim-start-pages"}, true},
	} {
		if got := trimsStartPages(tc.args); got != tc.want {
			t.Errorf("trimsStartPages(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
