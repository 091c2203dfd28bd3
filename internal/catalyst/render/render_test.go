package render_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/platform-operator/platform-operator/internal/catalyst/render"
	"github.com/platform-operator/platform-operator/internal/catalyst/render/rendertest"
)

func TestHelmValues(t *testing.T) {
	in := render.Input{
		Image: render.Image{Repository: "reg.test/team/web", Tag: "abc1234", Digest: "sha256:00"},
		Host:  "ns.preview.test",
		Env:   []render.EnvVar{{Name: "A", Value: "1"}, {Name: "TOKEN", Secret: "creds", Key: "token", Value: "ignored"}},
	}
	tests := []struct {
		name   string
		values map[string]any
		want   map[string]any
	}{
		{name: "no project values", want: map[string]any{
			"image":   map[string]any{"repository": "reg.test/team/web", "tag": "abc1234", "digest": "sha256:00"},
			"ingress": map[string]any{"host": "ns.preview.test"},
			"env": []any{map[string]any{"name": "A", "value": "1"},
				map[string]any{"name": "TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "creds", "key": "token"}}}},
		}},
		{name: "maps merge key by key, ours win, the rest stays", values: map[string]any{
			"image":    map[string]any{"repository": "theirs", "pullPolicy": "Always"},
			"ingress":  "not a map",
			"env":      []any{"replaced"},
			"replicas": float64(2),
		}, want: map[string]any{
			"image":   map[string]any{"repository": "reg.test/team/web", "tag": "abc1234", "digest": "sha256:00", "pullPolicy": "Always"},
			"ingress": map[string]any{"host": "ns.preview.test"},
			"env": []any{map[string]any{"name": "A", "value": "1"},
				map[string]any{"name": "TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "creds", "key": "token"}}}},
			"replicas": float64(2),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := json.Marshal(tt.values)
			in := in
			in.Values = tt.values
			got := render.HelmValues(in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("HelmValues =\n%v\nwant\n%v", got, tt.want)
			}
			if after, _ := json.Marshal(tt.values); string(after) != string(before) {
				t.Errorf("the Project's values were changed: %s", after)
			}
			if s, _ := json.Marshal(got); strings.Contains(string(s), "ignored") {
				t.Errorf("a Secret-valued env var's value reached the values: %s", s)
			}
		})
	}
}

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// scope knows a few kinds, as a RESTMapper would.
func scope(gvk schema.GroupVersionKind) (bool, error) {
	switch gvk.Kind {
	case "ConfigMap", "Deployment", "Service":
		return true, nil
	case "ClusterRole", "Namespace", "CustomResourceDefinition":
		return false, nil
	}
	return false, &os.PathError{Op: "map", Path: gvk.Kind, Err: os.ErrNotExist}
}

// TestPolicyBoundary is the namespace boundary: what Check refuses of any kind.
func TestPolicyBoundary(t *testing.T) {
	tests := []struct {
		name    string
		objs    []*unstructured.Unstructured
		refused []string
	}{
		{name: "namespaced, no namespace: set", objs: []*unstructured.Unstructured{obj("v1", "ConfigMap", "", "a")}},
		{name: "its own namespace", objs: []*unstructured.Unstructured{obj("apps/v1", "Deployment", "env-ns", "web")}},
		{name: "cluster-scoped", objs: []*unstructured.Unstructured{obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "escape"), obj("v1", "Namespace", "", "x")},
			refused: []string{"ClusterRole escape (cluster-scoped)", "Namespace x (cluster-scoped)"}},
		{name: "cluster-scoped with a namespace set", objs: []*unstructured.Unstructured{obj("rbac.authorization.k8s.io/v1", "ClusterRole", "env-ns", "escape")},
			refused: []string{"ClusterRole env-ns/escape (cluster-scoped)"}},
		{name: "another namespace", objs: []*unstructured.Unstructured{obj("v1", "ConfigMap", "kube-system", "elsewhere"), obj("v1", "ConfigMap", "", "fine")},
			refused: []string{"ConfigMap kube-system/elsewhere (namespace kube-system is not the environment's)"}},
		{name: "unknown kind", objs: []*unstructured.Unstructured{obj("example.com/v1", "Widget", "", "w")},
			refused: []string{"Widget w (kind Widget.example.com is not served by the cluster)"}},
		{name: "twice", objs: []*unstructured.Unstructured{obj("v1", "ConfigMap", "", "a"), obj("v1", "ConfigMap", "env-ns", "a")},
			refused: []string{"ConfigMap env-ns/a (twice)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render.Policy{Namespace: "env-ns", Host: "env-ns.preview.test", Scope: scope}.Check(tt.objs)
			if !slices.Equal(got, tt.refused) {
				t.Errorf("refused = %q, want %q", got, tt.refused)
			}
			if len(tt.refused) == 0 {
				for _, o := range tt.objs {
					if o.GetNamespace() != "env-ns" {
						t.Errorf("%s: namespace %q, want env-ns", render.Describe(o), o.GetNamespace())
					}
				}
			}
		})
	}
}

func TestInjectEnv(t *testing.T) {
	dep := obj("apps/v1", "Deployment", "", "web")
	_ = unstructured.SetNestedSlice(dep.Object, []any{
		map[string]any{"name": "app", "image": "reg/web@sha256:1", "env": []any{map[string]any{"name": "TOKEN", "value": "from-repo"}, map[string]any{"name": "KEEP", "value": "k"}}},
		map[string]any{"name": "sidecar", "image": "other"},
	}, "spec", "template", "spec", "containers")
	cron := obj("batch/v1", "CronJob", "", "c")
	_ = unstructured.SetNestedSlice(cron.Object, []any{map[string]any{"name": "job", "image": "reg/web@sha256:1"}},
		"spec", "jobTemplate", "spec", "template", "spec", "containers")
	cm := obj("v1", "ConfigMap", "", "x")
	n := render.InjectEnv([]*unstructured.Unstructured{dep, cron, cm}, "reg/web@sha256:1", "catalyst-env-abc",
		[]render.EnvVar{{Name: "A", Value: "1"}, {Name: "TOKEN", Secret: "s", Key: "k"}})
	if n != 2 {
		t.Errorf("changed %d containers, want 2", n)
	}
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	app := containers[0].(map[string]any)
	wantEnv := []any{map[string]any{"name": "KEEP", "value": "k"},
		map[string]any{"name": "TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}}
	if !reflect.DeepEqual(app["env"], wantEnv) {
		t.Errorf("env = %v, want %v", app["env"], wantEnv)
	}
	if !reflect.DeepEqual(app["envFrom"], []any{map[string]any{"configMapRef": map[string]any{"name": "catalyst-env-abc"}}}) {
		t.Errorf("envFrom = %v", app["envFrom"])
	}
	if _, ok := containers[1].(map[string]any)["env"]; ok {
		t.Error("a container of another image got the env vars")
	}
}

// write puts files under a new directory.
func write(t *testing.T, files rendertest.Files) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var input = render.Input{
	Namespace: "env-ns", Release: "web",
	Image:  render.Image{Repository: "reg.test/team/web", Tag: "abc1234", Digest: "sha256:0123"},
	Host:   "env-ns.preview.test",
	Env:    []render.EnvVar{{Name: "GREETING", Value: "hello"}, {Name: "TOKEN", Secret: "creds", Key: "token"}},
	Labels: map[string]string{"app.kubernetes.io/managed-by": "platform-operator"},
}

// summary is what the tests compare of rendered objects: kinds and names, the Deployment's container.
func summary(t *testing.T, objs []*unstructured.Unstructured) (names []string, container map[string]any) {
	t.Helper()
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
		if o.GetLabels()["app.kubernetes.io/managed-by"] != "platform-operator" {
			t.Errorf("%s lacks the operator's label: %v", render.Describe(o), o.GetLabels())
		}
		if o.GetKind() == "Deployment" {
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			container = cs[0].(map[string]any)
		}
	}
	slices.Sort(names)
	return names, container
}

func TestManifestsAndKustomize(t *testing.T) {
	tests := []struct {
		name   string
		files  rendertest.Files
		path   string
		kust   bool
		want   []string
		label  string
		errHas string
	}{
		{name: "manifest directory", files: rendertest.Manifests(), path: "deploy",
			want: []string{"ConfigMap/catalyst-env-", "ConfigMap/extra", "Deployment/web", "Service/app"}},
		{name: "kustomization", files: rendertest.Kustomization(), path: "kustomize/overlay", kust: true, label: "preview",
			want: []string{"ConfigMap/catalyst-env-", "ConfigMap/extra", "Deployment/web", "Service/app"}},
		{name: "manifest path missing", files: rendertest.Manifests(), path: "nope", errHas: "path nope does not exist"},
		{name: "kustomize path without kustomization", files: rendertest.Manifests(), path: "deploy", kust: true, errHas: "kustomize deploy"},
		{name: "invalid yaml", files: rendertest.Files{"d/x.yaml": "kind: [\n"}, path: "d", errHas: "kustomize d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, tt.files)
			in := input
			in.Path = tt.path
			build := render.Manifests
			if tt.kust {
				build = render.Kustomize
			}
			objs, err := build(dir, in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names, c := summary(t, objs)
			var cmName string
			for i, n := range names {
				if strings.HasPrefix(n, "ConfigMap/catalyst-env-") {
					cmName = strings.TrimPrefix(n, "ConfigMap/")
					names[i] = "ConfigMap/catalyst-env-"
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("objects = %v, want %v", names, tt.want)
			}
			if c["image"] != "reg.test/team/web@sha256:0123" {
				t.Errorf("image = %v", c["image"])
			}
			if !reflect.DeepEqual(c["envFrom"], []any{map[string]any{"configMapRef": map[string]any{"name": cmName}}}) {
				t.Errorf("envFrom = %v, want the generated ConfigMap %s", c["envFrom"], cmName)
			}
			env, _ := json.Marshal(c["env"])
			if !strings.Contains(string(env), `"FROM_REPO"`) || !strings.Contains(string(env), `"secretKeyRef":{"key":"token","name":"creds"}`) {
				t.Errorf("env = %s, want the repository's and the Secret reference", env)
			}
			for _, o := range objs {
				if o.GetKind() == "ConfigMap" && o.GetName() == cmName {
					data, _ := json.Marshal(o.Object["data"])
					if string(data) != `{"GREETING":"hello"}` {
						t.Errorf("env ConfigMap data = %s, want only the plain value", data)
					}
				}
				if tt.label != "" && o.GetName() != cmName && o.GetLabels()["tier"] != tt.label {
					t.Errorf("%s lost the kustomization's label", render.Describe(o))
				}
			}
		})
	}
}

func TestHelm(t *testing.T) {
	dir := write(t, rendertest.Chart())
	tests := []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{name: "defaults", want: []string{"ConfigMap/extra", "Deployment/web", "Service/app"}},
		{name: "project values", values: map[string]any{"extra": false, "clusterRole": true, "image": map[string]any{"pullPolicy": "Always"}},
			want: []string{"ClusterRole/escape", "Deployment/web", "Service/app"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input
			in.Path, in.Values = "chart", tt.values
			ch, err := render.Chart(dir, in)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := render.Helm(ch, in)
			if err != nil {
				t.Fatal(err)
			}
			names, c := summary(t, objs)
			if !slices.Equal(names, tt.want) {
				t.Errorf("objects = %v, want %v", names, tt.want)
			}
			if c["image"] != "reg.test/team/web:abc1234" {
				t.Errorf("image = %v", c["image"])
			}
			env, _ := json.Marshal(c["env"])
			if string(env) != `[{"name":"GREETING","value":"hello"},{"name":"TOKEN","valueFrom":{"secretKeyRef":{"key":"token","name":"creds"}}}]` {
				t.Errorf("env = %s", env)
			}
			if pp := c["imagePullPolicy"]; tt.values != nil && pp != "Always" {
				t.Errorf("imagePullPolicy = %v, want the Project's Always", pp)
			}
		})
	}
	if _, err := render.Chart(dir, render.Input{Path: "nope"}); err == nil || !strings.Contains(err.Error(), "holds no Chart.yaml") {
		t.Errorf("missing chart: error = %v", err)
	}
}
