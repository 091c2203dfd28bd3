package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operator/platform-operator/internal/testutil/standin"
)

// Scenario is one API's part of the demo: what to apply, how it becomes Ready on the local cluster and
// what to show a user then. Each API adds one file that registers its scenario from init; main runs
// every registered scenario (or those -only names), one section each, on the one cluster and operator.
type Scenario struct {
	// Name selects the scenario with -only: short, lower case, unique ("irc").
	Name string
	// Title heads the scenario's section: which API it shows, in a few words.
	Title string
	// Samples are files under config/samples, applied in order with server-side apply; namespaced
	// objects without a namespace go to the demo's namespace.
	Samples []string
	// Objects, when set, returns more objects to apply after the samples (from a fixtures package, say).
	Objects func(namespace string) []client.Object
	// Operator, when set, is what the scenario runs beside the cluster before the operator starts (a
	// registry or a Git server on 127.0.0.1, say), and the operator flags it then needs (a CA file to
	// trust, say): the operator's flags are fixed before any scenario plays. main calls it once for each
	// selected scenario, after the cluster and before the operator starts (also with -skip-operator,
	// since Objects may name what it started), with dir, an empty directory of the scenario's own that
	// is removed at exit; stop is called at exit, after the operator stopped, and must stop everything
	// it started. An error stops the demo.
	Operator func(ctx context.Context, dir string) (args []string, stop func(), err error)
	// Follow is the kind, among what was applied, that the scenario follows to Ready and shows: the
	// first object of this kind.
	Follow schema.GroupVersionKind
	// Before, when set, is what happens before the samples are applied, in order, and only when an
	// operator runs: stand-ins for what the samples point at (Play), so that the operator's first look
	// at them finds it there, not a failure the demo fixes a moment later. obj is the followed object as
	// the samples state it, not yet applied.
	Before func(obj client.Object) []Step
	// Steps, when set, are what happens between applying and the wait for Ready, in order, and only when
	// an operator runs: waits for the operator's progress (WaitFor) and stand-ins for the controllers the
	// local cluster lacks (Play). obj is the followed object as applied.
	Steps func(obj client.Object) []Step
	// Ready says whether the freshly read followed object is Ready, and what it shows now (printed
	// when it is, and in the timeout error when it never is). Default: ConditionTrue("Ready").
	Ready func(obj client.Object) (ready bool, state string)
	// Show prints what a user would look at, once Ready or once the waits gave up; obj is freshly read.
	Show func(ctx context.Context, e *Env, obj client.Object)
	// Kubectl, when set, returns kubectl arguments worth trying on obj, printed while the demo waits.
	Kubectl func(obj client.Object) []string
}

// Step is one thing a scenario does on the way to Ready: make it with WaitFor or Play.
type Step struct {
	run func(ctx context.Context, e *Env, obj client.Object) error
}

// WaitFor waits, under the section header, until done says the freshly read followed object is there,
// then prints its state and how long it took. It gives up after -wait, when the operator exits or on
// Ctrl-C, and the error then says what it last saw.
func WaitFor(header string, done func(obj client.Object) (bool, string)) Step {
	return Step{run: func(ctx context.Context, e *Env, obj client.Object) error {
		e.Step("%s", header)
		t := time.Now()
		state, err := e.Poll(ctx, obj, done)
		if err != nil {
			return err
		}
		e.Printf("%s after %s", state, secs(time.Since(t)))
		return nil
	}}
}

// Play stands in for a controller the local cluster does not run (cert-manager, say): play does once
// what that controller would do, and prints under a section of its own what it did and that the demo,
// not the controller, did it.
func Play(play func(ctx context.Context, e *Env, obj client.Object) error) Step {
	return Step{run: play}
}

// registry holds every scenario, in Name order; register adds to it from each scenario file's init.
var registry []Scenario

func register(s Scenario) {
	registry = append(registry, s)
	slices.SortStableFunc(registry, func(a, b Scenario) int { return cmp.Compare(a.Name, b.Name) })
}

var scenarioName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// checkScenarios says what is wrong with a registry: a name -only cannot select, a name twice, a
// scenario without a title, a kind to follow, or something to show.
func checkScenarios(all []Scenario) error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range all {
		switch {
		case !scenarioName.MatchString(s.Name):
			errs = append(errs, fmt.Errorf("scenario %q: the name must match %s", s.Name, scenarioName))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("scenario %q is registered twice", s.Name))
		}
		seen[s.Name] = true
		if strings.TrimSpace(s.Title) == "" {
			errs = append(errs, fmt.Errorf("scenario %q has no title", s.Name))
		}
		if s.Follow.Kind == "" {
			errs = append(errs, fmt.Errorf("scenario %q follows no kind", s.Name))
		}
		if s.Show == nil {
			errs = append(errs, fmt.Errorf("scenario %q shows nothing", s.Name))
		}
	}
	return errors.Join(errs...)
}

// selectScenarios returns the scenarios -only names (a comma-separated list), in registry order; an
// empty list selects them all.
func selectScenarios(all []Scenario, only string) ([]Scenario, error) {
	want := map[string]bool{}
	for n := range strings.SplitSeq(only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	if len(want) == 0 {
		return all, nil
	}
	var picked []Scenario
	for _, s := range all {
		if want[s.Name] {
			picked = append(picked, s)
			delete(want, s.Name)
		}
	}
	if len(want) > 0 {
		unknown := make([]string, 0, len(want))
		for n := range want {
			unknown = append(unknown, n)
		}
		slices.Sort(unknown)
		return nil, fmt.Errorf("-only: no scenario %s; the scenarios are: %s",
			strings.Join(unknown, ", "), strings.Join(names(all), ", "))
	}
	return picked, nil
}

func names(all []Scenario) []string {
	var n []string
	for _, s := range all {
		n = append(n, s.Name)
	}
	return n
}

// readyCondition is the condition every API of the operator sums its state up in.
const readyCondition = "Ready"

// readyStatus is the status of the Ready condition among conds, empty while there is none: the READY
// column of a kubectl-like table.
func readyStatus(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, readyCondition); c != nil {
		return string(c.Status)
	}
	return ""
}

// DeploymentAvailable is the step that waits for the app's Deployment to become Available, which the
// operator reports in condType (the kube-controller-manager, kube-scheduler and kwok of the local
// cluster run its pod).
func DeploymentAvailable(app, condType string) Step {
	return WaitFor("Waiting for the "+app+" Deployment to become Available (the deployment controller, the scheduler and "+
		"kwok's fake node run its pod)", ConditionTrue(condType))
}

// playCertificateReady marks Certificate ns/name Ready, as cert-manager does once it has issued it into
// Secret secret (named to the reader when not empty): no cert-manager runs in the local cluster.
func playCertificateReady(ctx context.Context, e *Env, ns, name, secret string) error {
	e.Step("Playing cert-manager: no cert-manager runs in this local cluster, so the demo itself marks "+
		"Certificate %s Ready", name)
	if secret != "" {
		e.Printf("(on a real cluster, cert-manager issues the certificate into Secret %s and sets this condition)", secret)
	}
	if err := standin.MarkCertificateReady(ctx, e.Client, ns, name); err != nil {
		return fmt.Errorf("mark Certificate %s Ready: %w", name, err)
	}
	e.Printf("Certificate %s: Ready=True (set by the demo)", name)
	return nil
}

// ConditionTrue is a check for WaitFor and Scenario.Ready: the condition is True and describes the
// current generation (status.observedGeneration). It reads status.conditions and
// status.observedGeneration of any kind that follows the metav1.Condition convention.
func ConditionTrue(condType string) func(obj client.Object) (bool, string) {
	return func(obj client.Object) (bool, string) {
		conds, observed := statusOf(obj)
		c := meta.FindStatusCondition(conds, condType)
		switch {
		case c == nil:
			return false, "no " + condType + " condition"
		case c.Status != metav1.ConditionTrue:
			return false, fmt.Sprintf("%s=%s (%s: %s)", condType, c.Status, c.Reason, c.Message)
		case observed != obj.GetGeneration():
			return false, fmt.Sprintf("%s=True for generation %d, metadata.generation is %d", condType, observed, obj.GetGeneration())
		}
		return true, condType + "=True"
	}
}

// Reconciled is a check for WaitFor: status.observedGeneration has reached metadata.generation, so the
// operator has reconciled the current spec.
func Reconciled(obj client.Object) (bool, string) {
	_, observed := statusOf(obj)
	if observed >= obj.GetGeneration() {
		return true, fmt.Sprintf("status.observedGeneration %d = metadata.generation", observed)
	}
	return false, fmt.Sprintf("status.observedGeneration %d, metadata.generation %d", observed, obj.GetGeneration())
}

// Conditions returns obj's status.conditions, for Printer.Conditions.
func Conditions(obj client.Object) []metav1.Condition {
	conds, _ := statusOf(obj)
	return conds
}

// statusOf reads status.conditions and status.observedGeneration through the object's JSON form, so it
// works for every kind without knowing its Go type.
func statusOf(obj client.Object) ([]metav1.Condition, int64) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, 0
	}
	status, _ := u["status"].(map[string]any)
	var out struct {
		Conditions         []metav1.Condition `json:"conditions"`
		ObservedGeneration int64              `json:"observedGeneration"`
	}
	if status != nil {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(status, &out)
	}
	return out.Conditions, out.ObservedGeneration
}
