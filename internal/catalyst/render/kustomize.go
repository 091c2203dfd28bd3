package render

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// overlayDir is where, in the in-memory copy of the checkout, the operator's own kustomization goes.
const overlayDir = "/.catalyst-overlay"

// generatedLabel marks the env ConfigMap kustomize generates, to find its hashed name.
const generatedLabel = "catalyst.dev/generated"

// Manifests builds every YAML document under in.Path (recursively, *.yaml, *.yml and *.json, in path
// order) with kustomize, which injects the image and generates the env ConfigMap as for Kustomize.
func Manifests(checkout string, in Input) ([]*unstructured.Unstructured, error) {
	return build(checkout, in, false)
}

// Kustomize builds the kustomization at in.Path with the image and the env ConfigMap injected: the
// operator's overlay lists it as its only resource, with an images entry for ImagePlaceholder and the
// image repository, and a configMapGenerator EnvConfigMap with the plain env vars.
func Kustomize(checkout string, in Input) ([]*unstructured.Unstructured, error) {
	return build(checkout, in, true)
}

func build(checkout string, in Input, kustomization bool) ([]*unstructured.Unstructured, error) {
	mem, err := copyToMemory(checkout)
	if err != nil {
		return nil, err
	}
	target := path.Join("/", path.Clean(filepath.ToSlash(in.Path)))
	if !mem.Exists(target) {
		return nil, fmt.Errorf("path %s does not exist in the repository", in.Path)
	}
	var resources []string
	if kustomization {
		if !mem.IsDir(target) {
			return nil, fmt.Errorf("path %s is not a directory holding a kustomization", in.Path)
		}
		resources = []string{target}
	} else {
		if resources, err = manifestFiles(mem, target); err != nil {
			return nil, err
		}
		if len(resources) == 0 {
			return nil, fmt.Errorf("path %s holds no .yaml, .yml or .json file", in.Path)
		}
	}
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: relative(resources),
	}
	if in.Image.Repository != "" {
		for _, name := range []string{ImagePlaceholder, in.Image.Repository} {
			img := types.Image{Name: name, NewName: in.Image.Repository, NewTag: in.Image.Tag}
			if in.Image.Digest != "" {
				img.NewTag, img.Digest = "", in.Image.Digest
			}
			k.Images = append(k.Images, img)
		}
	}
	var literals []string
	for _, e := range in.Env {
		if e.Secret == "" {
			literals = append(literals, e.Name+"="+e.Value)
		}
	}
	if len(literals) > 0 {
		k.ConfigMapGenerator = []types.ConfigMapArgs{{
			GeneratorArgs: types.GeneratorArgs{
				Name:          EnvConfigMap,
				KvPairSources: types.KvPairSources{LiteralSources: literals},
				Options:       &types.GeneratorOptions{Labels: map[string]string{generatedLabel: EnvConfigMap}},
			},
		}}
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := mem.MkdirAll(overlayDir); err != nil {
		return nil, err
	}
	if err := mem.WriteFile(path.Join(overlayDir, "kustomization.yaml"), data); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	// The file system is an in-memory copy of the checkout and nothing else: the overlay may read the
	// repository's files outside its own directory, and nothing of the operator's disk.
	opts.LoadRestrictions = types.LoadRestrictionsNone
	res, err := krusty.MakeKustomizer(opts).Run(mem, overlayDir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", in.Path, err)
	}
	var objs []*unstructured.Unstructured
	configMap := ""
	for _, r := range res.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		if l := u.GetLabels(); l[generatedLabel] == EnvConfigMap && u.GetKind() == "ConfigMap" {
			configMap = u.GetName()
		}
		objs = append(objs, u)
	}
	if len(objs) > MaxObjects {
		return nil, fmt.Errorf("path %s renders %d objects, more than %d", in.Path, len(objs), MaxObjects)
	}
	if in.Image.Repository != "" {
		InjectEnv(objs, in.Image.Ref(), configMap, in.Env)
	}
	Label(objs, in.Labels)
	return objs, nil
}

// relative makes absolute in-memory paths relative to the overlay.
func relative(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = ".." + p
	}
	return out
}

// manifestFiles lists the YAML and JSON files under dir, sorted.
func manifestFiles(mem filesys.FileSystem, dir string) ([]string, error) {
	var out []string
	err := mem.Walk(dir, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".yaml", ".yml", ".json":
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// copyToMemory copies a checkout (regular files only) into an in-memory file system rooted at /.
func copyToMemory(dir string) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		target := path.Join("/", filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			return mem.MkdirAll(target)
		case !d.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(target, data)
	})
	return mem, err
}
