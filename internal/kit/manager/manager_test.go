package manager

import (
	oplabels "github.com/platform-operator/platform-operator/internal/kit/labels"

	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/platform-operator/platform-operator/internal/kit/platform"
	"github.com/platform-operator/platform-operator/internal/kit/scheme"
	"github.com/platform-operator/platform-operator/internal/testutil"
)

func TestMergeCacheRules(t *testing.T) {
	identity := func(in any) (any, error) { return in, nil }
	ergo := labels.SelectorFromSet(labels.Set{oplabels.NameLabel: "ergo"})
	soju := labels.SelectorFromSet(labels.Set{oplabels.NameLabel: "soju"})
	group := func(name string, rules ...CacheRule) Group {
		return Group{Name: name, Cache: func(platform.Capabilities) []CacheRule { return rules }}
	}
	tests := []struct {
		name    string
		groups  []Group
		want    []string
		wantErr string
	}{
		{name: "one group's children", groups: []Group{group("irc",
			CacheRule{Object: &corev1.ConfigMap{}}, CacheRule{Object: &appsv1.Deployment{}})},
			want: []string{"ConfigMap: Managed", "Deployment: Managed"}},
		{name: "a group that reads what it did not label widens the kind for all", groups: []Group{
			group("irc", CacheRule{Object: &corev1.ConfigMap{}}),
			group("catalyst", CacheRule{Object: &corev1.ConfigMap{}, Scope: All, Why: "users' ConfigMaps"})},
			want: []string{"ConfigMap: All"}},
		{name: "All needs a reason", groups: []Group{group("catalyst", CacheRule{Object: &corev1.Namespace{}, Scope: All})},
			wantErr: "caching every Namespace needs a reason"},
		{name: "a transform is kept", groups: []Group{group("irc",
			CacheRule{Object: &corev1.Secret{}, Scope: All, Why: "users' Secrets", Transform: identity})},
			want: []string{"Secret: All, transformed"}},
		{name: "two transforms of one kind are refused", groups: []Group{
			group("irc", CacheRule{Object: &corev1.Secret{}, Transform: identity}),
			group("soju", CacheRule{Object: &corev1.Secret{}, Transform: identity})},
			wantErr: "groups irc and soju both transform cached Secret objects"},
		{name: "groups transform their own objects of one kind", groups: []Group{
			group("irc", CacheRule{Object: &appsv1.Deployment{}, Transform: identity, TransformSelector: ergo}),
			group("soju", CacheRule{Object: &appsv1.Deployment{}, Transform: identity, TransformSelector: soju})},
			want: []string{"Deployment: Managed, transformed"}},
		{name: "a transform of every object excludes a selected one", groups: []Group{
			group("irc", CacheRule{Object: &appsv1.Deployment{}, Transform: identity, TransformSelector: ergo}),
			group("soju", CacheRule{Object: &appsv1.Deployment{}, Transform: identity})},
			wantErr: "groups irc and soju both transform cached Deployment objects"},
		{name: "a selector needs a transform", groups: []Group{
			group("irc", CacheRule{Object: &appsv1.Deployment{}, TransformSelector: ergo})},
			wantErr: "has a TransformSelector and no Transform"},
		{name: "a kind no group lists keeps no namespace index", groups: []Group{
			group("catalyst", CacheRule{Object: &corev1.ServiceAccount{}, Unlisted: true})},
			want: []string{"ServiceAccount: Managed, unlisted"}},
		{name: "one group that lists a kind keeps its namespace index for all", groups: []Group{
			group("catalyst", CacheRule{Object: &corev1.ServiceAccount{}, Unlisted: true}),
			group("irc", CacheRule{Object: &corev1.ServiceAccount{}})},
			want: []string{"ServiceAccount: Managed"}},
		{name: "a rule without an object", groups: []Group{group("x", CacheRule{})}, wantErr: "has no object"},
		{name: "no groups", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Describe(scheme.Scheme, platform.Capabilities{}, tt.groups...)
			if testutil.WantError(t, err, tt.wantErr) {
				return
			}
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("rules %q, want %q", got, tt.want)
			}
		})
	}
}

// Each object goes through the transform of the rule that selects it, and the others through the default
// (managed fields stripped): one group's transform never touches another group's objects.
func TestSelectedTransform(t *testing.T) {
	mark := func(name string) func(any) (any, error) {
		return func(in any) (any, error) {
			in.(*appsv1.Deployment).Annotations = map[string]string{"by": name}
			return in, nil
		}
	}
	transform := selectedTransform([]namedRule{
		{group: "irc", CacheRule: CacheRule{Transform: mark("irc"), TransformSelector: labels.SelectorFromSet(labels.Set{oplabels.NameLabel: "ergo"})}},
		{group: "soju", CacheRule: CacheRule{Transform: mark("soju"), TransformSelector: labels.SelectorFromSet(labels.Set{oplabels.NameLabel: "soju"})}},
	})
	for app, want := range map[string]string{"ergo": "irc", "soju": "soju", "authentik": ""} {
		d := &appsv1.Deployment{}
		d.Labels = map[string]string{oplabels.NameLabel: app}
		d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
		out, err := transform(d)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*appsv1.Deployment)
		if got.Annotations["by"] != want {
			t.Errorf("%s: transformed by %q, want %q", app, got.Annotations["by"], want)
		}
		if want == "" && got.ManagedFields != nil {
			t.Errorf("%s: managed fields kept by the default transform", app)
		}
	}
}
