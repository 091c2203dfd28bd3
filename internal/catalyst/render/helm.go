package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Chart loads the chart at in.Path of the checkout (its charts/ dependencies included).
func Chart(checkout string, in Input) (*chart.Chart, error) {
	dir := filepath.Join(checkout, filepath.FromSlash(in.Path))
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		return nil, fmt.Errorf("path %s holds no Chart.yaml", in.Path)
	}
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", in.Path, err)
	}
	return ch, nil
}

// Helm renders the chart as an install of release in.Release into in.Namespace would, without a cluster,
// and returns every object it would create: the manifest, as the Labeller post-renders it, the hooks,
// and the chart's CRDs (which the guard refuses: they are cluster-scoped).
func Helm(ch *chart.Chart, in Input) ([]*unstructured.Unstructured, error) {
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	install := action.NewInstall(cfg)
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = in.Release, in.Namespace
	install.PostRenderer = Labeller{Labels: in.Labels}
	rel, err := install.Run(ch, HelmValues(in))
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", in.Path, err)
	}
	objs, err := Parse([]byte(rel.Manifest))
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", in.Path, err)
	}
	for _, h := range rel.Hooks {
		hooks, err := Parse([]byte(h.Manifest))
		if err != nil {
			return nil, fmt.Errorf("chart %s, hook %s: %w", in.Path, h.Path, err)
		}
		objs = append(objs, hooks...)
	}
	for _, crd := range ch.CRDObjects() {
		crds, err := Parse(crd.File.Data)
		if err != nil {
			return nil, fmt.Errorf("chart %s, %s: %w", in.Path, crd.Filename, err)
		}
		objs = append(objs, crds...)
	}
	if len(objs) > MaxObjects {
		return nil, fmt.Errorf("chart %s renders %d objects, more than %d", in.Path, len(objs), MaxObjects)
	}
	return objs, nil
}

// Labeller is the Helm post-renderer that puts the environment's labels on every object of the manifest,
// so the operator's cache sees them (and its watches repair what goes missing).
type Labeller struct {
	Labels map[string]string
}

// Run labels every document of the rendered manifest.
func (l Labeller) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	docs := releaseutil.SplitManifests(rendered.String())
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	out := &bytes.Buffer{}
	for _, k := range keys {
		objs, err := Parse([]byte(docs[k]))
		if err != nil {
			return nil, err
		}
		Label(objs, l.Labels)
		for _, o := range objs {
			data, err := yaml.Marshal(o.Object)
			if err != nil {
				return nil, err
			}
			out.WriteString("---\n")
			out.Write(data)
		}
	}
	return out, nil
}
