package catalyst

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/kit/reconcile"
)

func TestReleaseName(t *testing.T) {
	tests := []struct{ env, want string }{
		{"pr-1", "pr-1"},
		{strings.Repeat("a", 53), strings.Repeat("a", 53)},
		{strings.Repeat("a", 54), strings.Repeat("a", 46) + "-"},
	}
	for _, tt := range tests {
		got := ReleaseName(tt.env)
		if len(got) > 53 || !strings.HasPrefix(got, tt.want) {
			t.Errorf("ReleaseName(%q) = %q, want %q... of at most 53 characters", tt.env, got, tt.want)
		}
	}
	if ReleaseName(strings.Repeat("a", 60)) == ReleaseName(strings.Repeat("a", 61)) {
		t.Error("two long names share a release")
	}
}

func TestDeployConfigFromFlags(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := DeployConfigFromFlags(" git.example.com, ,127.0.0.1", ca)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.GitHosts, []string{"git.example.com", "127.0.0.1"}) || string(c.GitCABundle) != "PEM" {
		t.Errorf("config = %+v", c)
	}
	if c, err := DeployConfigFromFlags("", ""); err != nil || c.GitHosts != nil || c.GitCABundle != nil {
		t.Errorf("empty flags: %+v, %v", c, err)
	}
	if _, err := DeployConfigFromFlags("", filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing CA file is accepted")
	}
}

// TestDeploymentReadiness: the rollout states the deploy reports on, read as reconcile.DeploymentReady
// reads them (kstatus), each as the Deployment controller writes it.
func TestDeploymentReadiness(t *testing.T) {
	complete := []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
	}
	dep := func(gen, observed int64, replicas *int32, updated, available int32) *appsv1.Deployment {
		want := int32(1)
		if replicas != nil {
			want = *replicas
		}
		conds := complete
		if updated < want || available < want {
			conds = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}}
		}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: replicas},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: want, UpdatedReplicas: updated, ReadyReplicas: available,
				AvailableReplicas: available, Conditions: conds}}
	}
	tests := []struct {
		name string
		d    *appsv1.Deployment
		ok   bool
		msg  string
	}{
		{"available, default one replica", dep(2, 2, nil, 1, 1), true, "Deployment is available"},
		{"new spec not seen", dep(3, 2, nil, 1, 1), false, "generation is 3, but latest observed generation is 2"},
		{"rolling out", dep(2, 2, ptr.To[int32](3), 1, 3), false, "Updated: 1/3"},
		{"not available", dep(2, 2, ptr.To[int32](2), 2, 1), false, "Available: 1/2"},
		{"scaled to zero", dep(1, 1, ptr.To[int32](0), 0, 0), true, "Deployment is available"},
	}
	for _, tt := range tests {
		got := reconcile.DeploymentReady(tt.d)
		if got.Ready != tt.ok || !strings.Contains(got.Message, tt.msg) {
			t.Errorf("%s: got %v %q, want %v %q", tt.name, got.Ready, got.Message, tt.ok, tt.msg)
		}
	}
}

// TestRenderIsolated: a chart whose template loops for long fails its render after the timeout instead of
// holding the worker (its process is killed: render.TestIsolatedTimeoutStops); the same chart without
// the loop renders (the positive control).
func TestRenderIsolated(t *testing.T) {
	write := func(loop bool) string {
		dir := t.TempDir()
		tmpl := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
		if loop {
			tmpl = "{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}\n" + tmpl
		}
		files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n", "templates/c.yaml": tmpl}
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	in := &deployInput{typ: catalystv1.DeploymentHelm}
	in.Path, in.Namespace, in.Release = ".", "ns", "r"
	r := &deployPhase{Deploy: DeployConfig{Render: render.Limits{Timeout: 500 * time.Millisecond}}, renders: make(chan struct{}, 1)}
	if _, _, err := r.renderIsolated(context.Background(), write(true), in); err == nil || !strings.Contains(err.Error(), "took longer than 500ms") {
		t.Errorf("a looping chart: err = %v, want the render timed out", err)
	}
	r.Deploy.Render.Timeout = time.Minute
	objs, _, err := r.renderIsolated(context.Background(), write(false), in)
	if err != nil || len(objs) != 1 {
		t.Errorf("the same chart without the loop: %d objects, err %v", len(objs), err)
	}
}
