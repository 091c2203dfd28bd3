package main

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst"
)

// envAt is environment 0 at generation gen whose status observed observed, with NamespaceReady and
// IngressReady set to ready and status.namespace set when ns is.
func envAt(gen, observed int64, ready bool, ns string) *catalystv1.Environment {
	env := catalystWorkload{}.environment(benchNamespace, 0)
	env.Generation = gen
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	env.Status = catalystv1.EnvironmentStatus{ObservedGeneration: observed, Namespace: ns, Conditions: []metav1.Condition{
		{Type: catalystv1.ConditionNamespaceReady, Status: status},
		{Type: catalystv1.ConditionIngressReady, Status: status},
	}}
	return env
}

// envNamespace is the operator's namespace for environment 0, its branch annotation branch.
func nsOfEnv(branch string) *corev1.Namespace {
	env := catalystWorkload{}.environment(benchNamespace, 0)
	ns := catalyst.Namespace(env, catalyst.PartsOf(env), catalyst.PartsOf(env).Namespace())
	ns.Annotations[catalystv1.AnnotationBranch] = branch
	return ns
}

// envChildren are environment 0's objects inside its namespace, as the operator builds them.
func envChildren() []client.Object {
	w := catalystWorkload{}
	env := w.environment(benchNamespace, 0)
	ns := catalyst.PartsOf(env).Namespace()
	s := catalyst.SettingsFor(w.project(benchNamespace), catalystDefaults)
	return []client.Object{catalyst.ResourceQuota(env, ns, s.Quota), catalyst.LimitRange(env, ns, s.Quota),
		catalyst.NetworkPolicy(env, ns, s.IngressNamespace, s.Egress), catalyst.Ingress(env, ns, catalyst.Host(ns, s.Domain), s, false)}
}

func TestCatalystObserver(t *testing.T) {
	const name = "env-00000"
	ns := catalyst.PartsOf(catalystWorkload{}.environment(benchNamespace, 0)).Namespace()
	// children are the four objects in the namespace, each seen without converging the environment.
	children := func() []step {
		var out []step
		for _, c := range envChildren() {
			out = append(out, step{obj: c, want: Progress{Name: name}})
		}
		return out
	}
	with := func(steps ...[]step) []step { return slices.Concat(steps...) }
	tests := []struct {
		name  string
		steps []step
	}{
		{"converges with its five children and a ready status for its generation", with([]step{
			{obj: envAt(1, 0, false, ""), want: Progress{Name: name}},
			{obj: nsOfEnv("feature/login"), want: Progress{Name: name}},
		}, children(), []step{
			{obj: envAt(1, 1, false, ""), want: Progress{Name: name}},
			{obj: envAt(1, 1, true, ns), want: Progress{Name: name, Converged: true}},
		})},
		{"a ready status without the namespace seen is not converged", with(children(), []step{
			{obj: envAt(1, 1, true, ns), want: Progress{Name: name}},
		})},
		{"a ready status without the children seen is not converged", []step{
			{obj: nsOfEnv("feature/login"), want: Progress{Name: name}},
			{obj: envAt(1, 1, true, ns), want: Progress{Name: name}},
		}},
		{"the last child converges a ready environment", with([]step{
			{obj: nsOfEnv("feature/login"), want: Progress{Name: name}},
			{obj: envAt(1, 1, true, ns), want: Progress{Name: name}},
		}, children()[:3], []step{
			{obj: envChildren()[3], want: Progress{Name: name, Converged: true}},
		})},
		{"a ready status of an older generation is not converged", with(children(), []step{
			{obj: nsOfEnv("feature/login"), want: Progress{Name: name}},
			{obj: envAt(2, 1, true, ns), want: Progress{Name: name}},
		})},
		{"an edit is written with the namespace's branch, applied with the status of its generation", with(children(), []step{
			{obj: nsOfEnv("feature/login"), want: Progress{Name: name}},
			{obj: envAt(1, 1, true, ns), want: Progress{Name: name, Converged: true}},
			{edit: 7, obj: envAt(2, 1, true, ns), want: Progress{Name: name}},
			{obj: nsOfEnv(branchMarker(7)), want: Progress{Name: name, Written: true}},
			{obj: envAt(2, 2, true, ns), want: Progress{Name: name, Converged: true, Written: true, Applied: true}},
		})},
		{"the status of the edit's generation before the namespace has it is not applied", with(children(), []step{
			{obj: nsOfEnv("feature/login"), want: Progress{Name: name}},
			{obj: envAt(1, 1, true, ns), want: Progress{Name: name, Converged: true}},
			{edit: 8, obj: envAt(2, 2, true, ns), want: Progress{Name: name, Converged: true}},
			{obj: nsOfEnv(branchMarker(8)), want: Progress{Name: name, Converged: true, Written: true, Applied: true}},
		})},
		{"a namespace that is not the catalyst operator's is none of the workload's", []step{
			{obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"app.kubernetes.io/instance": name}}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			observe(t, catalystWorkload{}.NewObserver(), name, tt.steps)
		})
	}
}

func TestInfoSizes(t *testing.T) {
	tests := []struct {
		max        int
		in, want   []int
		sweep, got int
	}{
		{max: 0, in: []int{100, 500, 1000}, want: []int{100, 500, 1000}, sweep: 5000, got: 5000},
		{max: 1000, in: []int{100, 1000, 5000}, want: []int{100, 1000}, sweep: 5000, got: 1000},
		{max: 1000, in: []int{0, 3}, want: []int{0, 3}, sweep: 2, got: 2},
	}
	for _, tt := range tests {
		i := Info{MaxObjects: tt.max}
		if got := i.sizes(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("MaxObjects %d: sizes(%v) = %v, want %v", tt.max, tt.in, got, tt.want)
		}
		if got := i.size(tt.sweep); got != tt.got {
			t.Errorf("MaxObjects %d: size(%d) = %d, want %d", tt.max, tt.sweep, got, tt.got)
		}
	}
}

func TestChurnRate(t *testing.T) {
	tests := []struct {
		interval time.Duration
		rate     float64
		n        int
		want     float64
	}{
		{0, 10, 3, 10},
		{2 * time.Second, 10, 3, 1.5},
		{2 * time.Second, 10, 1000, 10},
	}
	for _, tt := range tests {
		if got := (Info{EditInterval: tt.interval}).churnRate(tt.rate, tt.n); got != tt.want {
			t.Errorf("EditInterval %s: churnRate(%v, %d) = %v, want %v", tt.interval, tt.rate, tt.n, got, tt.want)
		}
	}
}
