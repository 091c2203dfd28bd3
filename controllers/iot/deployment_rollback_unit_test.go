package iot

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/fleettest"
)

// TestRollbackDue: when a reconcile rolls the current generation back, read from the spec, the status
// the reconcile starts from, and the counters' progress.
func TestRollbackDue(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	long := metav1.NewTime(now.Add(-time.Hour))
	batched := func(d *iotv1.Deployment) {
		d.Spec.Rollout = iotv1.Rollout{Strategy: iotv1.RolloutBatched, ProgressDeadlineSeconds: 600, Batched: &iotv1.BatchedRollout{
			BatchSize: intstr.FromInt32(2), MaxUnavailable: intstr.FromInt32(0), SuccessThreshold: 100}}
	}
	failing := fleet.Progress{Matched: 4, Published: 2, Succeeded: 1, Failed: 1}
	tests := []struct {
		name     string
		edit     func(*iotv1.Deployment)
		progress fleet.Progress
		want     bool
		wantTo   int64
		started  bool
		reason   string
	}{
		{name: "Pause (the default) never rolls back", edit: batched, progress: failing},
		{name: "Rollback, failures beyond maxUnavailable", edit: func(d *iotv1.Deployment) {
			batched(d)
			d.Spec.Rollout.OnFailure = iotv1.RolloutFailureRollback
		}, progress: failing, want: true, reason: string(fleet.HoldFailures)},
		{name: "Rollback, a healthy rollout", edit: func(d *iotv1.Deployment) {
			batched(d)
			d.Spec.Rollout.OnFailure = iotv1.RolloutFailureRollback
		}, progress: fleet.Progress{Matched: 4, Published: 2, Succeeded: 2}},
		{name: "Rollback, paused", edit: func(d *iotv1.Deployment) {
			batched(d)
			d.Spec.Rollout.OnFailure = iotv1.RolloutFailureRollback
			d.Spec.Paused = true
		}, progress: failing},
		{name: "Rollback, the deadline of this generation passed", edit: func(d *iotv1.Deployment) {
			d.Spec.Rollout.OnFailure = iotv1.RolloutFailureRollback
			d.Spec.Rollout.ProgressDeadlineSeconds = 60
			d.Status.ObservedGeneration = 2
			d.Status.LastProgressTime = &long
		}, progress: fleet.Progress{Matched: 4, Published: 4, Succeeded: 3}, want: true, reason: string(fleet.HoldDeadline)},
		{name: "Rollback, a deadline that is the previous generation's", edit: func(d *iotv1.Deployment) {
			d.Spec.Rollout.OnFailure = iotv1.RolloutFailureRollback
			d.Spec.Rollout.ProgressDeadlineSeconds = 60
			d.Status.ObservedGeneration = 1
			d.Status.LastProgressTime = &long
		}, progress: fleet.Progress{Matched: 4}},
		{name: "a rollback of this generation under way, whatever the spec says now", edit: func(d *iotv1.Deployment) {
			d.Status.RolledBackTo = &iotv1.RollbackStatus{Generation: 1, FailedGeneration: 2, Reason: "TooManyFailures"}
		}, progress: fleet.Progress{Matched: 4}, want: true, wantTo: 1, started: true, reason: "TooManyFailures"},
		{name: "the record of an older generation's rollback", edit: func(d *iotv1.Deployment) {
			d.Status.RolledBackTo = &iotv1.RollbackStatus{Generation: 1, FailedGeneration: 1, Reason: "TooManyFailures"}
		}, progress: failing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &DeploymentReconciler{now: func() time.Time { return now }}
			d := fleettest.Deployment("team-a", "web", "x", "img:2")
			d.Generation = 2
			tt.edit(d)
			s := r.newDeploymentScope(d, nil)
			s.progress = tt.progress
			got := r.rollbackDue(s)
			if got != tt.want || (s.rollback != nil) != tt.want {
				t.Fatalf("rollbackDue = %v (rollback %+v), want %v", got, s.rollback, tt.want)
			}
			if !tt.want {
				return
			}
			if rb := s.rollback; rb.to != tt.wantTo || rb.failed != 2 || rb.started != tt.started || rb.reason != tt.reason {
				t.Errorf("rollback %+v, want to %d, failed 2, started %v, reason %q", *rb, tt.wantTo, tt.started, tt.reason)
			}
		})
	}
}

// TestPreviousScore: the score a rollback returns to is the newest generation before the current one among
// the ControllerRevisions the Deployment controls, and only while it is within the operator's image
// policy (which may have changed since it was the spec).
func TestPreviousScore(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := iotv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	d := fleettest.Deployment("team-a", "web", "x", "registry.example/web:3")
	d.UID, d.Generation = "uid-web", 3
	rev := func(gen int64, image string, owned bool) *appsv1.ControllerRevision {
		score := fleettest.Deployment("team-a", "web", "x", image).Spec.Score
		data, _ := json.Marshal(score)
		r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: revisionName(d, gen), Labels: revisionLabels(d)},
			Data: runtime.RawExtension{Raw: data}, Revision: gen}
		if owned {
			if err := controllerutil.SetControllerReference(d, r, scheme); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	strict := ImagePolicy{Registries: []string{"registry.example"}}
	tests := []struct {
		name    string
		revs    []*appsv1.ControllerRevision
		policy  ImagePolicy
		want    int64
		image   string
		whyPart string
	}{
		{"the newest before the current generation", []*appsv1.ControllerRevision{rev(1, "registry.example/web:1", true), rev(2, "registry.example/web:2", true)}, strict, 2, "registry.example/web:2", ""},
		{"a revision not controlled by the Deployment is not read", []*appsv1.ControllerRevision{rev(1, "registry.example/web:1", true), rev(2, "evil.example/miner:1", false)}, ImagePolicy{}, 1, "registry.example/web:1", ""},
		{"none kept", nil, ImagePolicy{}, 0, "", "no earlier generation completed its rollout"},
		{"outside the image policy now", []*appsv1.ControllerRevision{rev(2, "other.example/web:2", true)}, strict, 0, "", "outside the operator's policy now"},
		{"control: the same without a policy", []*appsv1.ControllerRevision{rev(2, "other.example/web:2", true)}, ImagePolicy{}, 2, "other.example/web:2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			for _, r := range tt.revs {
				b = b.WithObjects(r)
			}
			r := &DeploymentReconciler{APIReader: b.Build(), Policy: Policy{Images: tt.policy}}
			revs, err := r.revisions(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			gen, score, why := r.previousScore(d, revs, 0)
			if gen != tt.want || (tt.whyPart == "") != (why == "") || !strings.Contains(why, tt.whyPart) {
				t.Fatalf("previousScore = %d, %q; want %d, a reason with %q", gen, why, tt.want, tt.whyPart)
			}
			if tt.image != "" && score.PodmanV0.Services[0].Image != tt.image {
				t.Errorf("score image %s, want %s", score.PodmanV0.Services[0].Image, tt.image)
			}
		})
	}
}
