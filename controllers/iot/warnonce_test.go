package iot

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/store"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

// A Deployment outside the policy, or with a selector that does not parse, is found so again on every
// wake-up the fleet's changes cause. Each test runs the step as successive reconciles do (each reading
// the status the one before wrote) and counts the Warning events: one for the refusal, none when the
// same refusal is found again, and, the control that shows the count can fail, one more when the
// message (what to fix) changes.

func TestPolicyViolationWarnsOncePerMessage(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &DeploymentReconciler{Recorder: rec}
	d := fleettest.Deployment("team-a", "web", "x", "img:1")
	d.Generation = 1
	refuse := func(msg string) {
		s := r.newDeploymentScope(d, nil)
		if _, err := refused(msg)(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		d.Status = *s.status
	}
	refuse("image img:1 is not pinned by digest")
	testutil.WantWarnings(t, rec, "first refusal", 1)
	refuse("image img:1 is not pinned by digest")
	testutil.WantWarnings(t, rec, "the same refusal found again", 0)
	refuse("image evil.example/img:1 is not from a registry the operator allows")
	testutil.WantWarnings(t, rec, "control: the spec edited to another violation", 1)
}

func TestInvalidSelectorWarnsOnce(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &DeploymentReconciler{Recorder: rec}
	d := fleettest.Deployment("team-a", "web", "x", "img:1")
	d.Generation = 1
	reconcileOnce := func(op metav1.LabelSelectorOperator) {
		d.Spec.TargetSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "site", Operator: op}}}
		// A store that is there: the selector is parsed before the store is used.
		s := r.newDeploymentScope(d, &store.Store{})
		if _, err := r.reconcileDesiredState(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if s.invalidSelector == "" {
			t.Fatalf("operator %q: the selector parsed", op)
		}
		d.Status = *s.summarize(r.clock())
	}
	reconcileOnce("Near")
	testutil.WantWarnings(t, rec, "first reconcile", 1)
	reconcileOnce("Near")
	testutil.WantWarnings(t, rec, "a wake-up with the same selector", 0)
	reconcileOnce("Far")
	testutil.WantWarnings(t, rec, "control: another invalid selector", 1)
	if c := condition(d, iotv1.ConditionProgressing); c == nil || c.Reason != iotv1.ReasonInvalidSelector {
		t.Errorf("Progressing = %v, want InvalidSelector", c)
	}
}
