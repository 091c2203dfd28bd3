package manager

import (
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
)

func TestNewGroup(t *testing.T) {
	var ran []string
	row := func(name string, err error, rules ...CacheRule) Controller {
		return Controller{Name: name,
			Cache: func(platform.Capabilities) []CacheRule { return rules },
			Setup: func(ctrl.Manager, platform.Capabilities) error { ran = append(ran, name); return err }}
	}
	broken := errors.New("broken")
	tests := []struct {
		name    string
		rows    []Controller
		want    []string // the merged cache
		wantRan []string
		wantErr error
	}{
		{name: "rows' rules together, setups in order",
			rows: []Controller{
				row("shared", nil, CacheRule{Object: &corev1.ConfigMap{}}),
				row("Deployment", nil, CacheRule{Object: &appsv1.Deployment{}}),
				{Name: "cache only", Cache: func(platform.Capabilities) []CacheRule {
					return []CacheRule{{Object: &corev1.Secret{}, Scope: All, Why: "users' Secrets"}}
				}},
				{Name: "webhook", Setup: func(ctrl.Manager, platform.Capabilities) error { ran = append(ran, "webhook"); return nil }}},
			want:    []string{"ConfigMap: Managed", "Deployment: Managed", "Secret: All"},
			wantRan: []string{"shared", "Deployment", "webhook"}},
		{name: "a failing row stops the setup", rows: []Controller{row("a", nil), row("b", broken), row("c", nil)},
			wantRan: []string{"a", "b"}, wantErr: broken},
		{name: "no rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran = nil
			g := NewGroup("g", tt.rows...)
			if g.Name != "g" {
				t.Errorf("name %q", g.Name)
			}
			got, err := Describe(scheme.Scheme, platform.Capabilities{}, g)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("cache %q, want %q", got, tt.want)
			}
			if err := g.Setup(nil, platform.Capabilities{}); !errors.Is(err, tt.wantErr) {
				t.Errorf("setup error %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(ran, tt.wantRan) {
				t.Errorf("ran %q, want %q", ran, tt.wantRan)
			}
		})
	}
}
