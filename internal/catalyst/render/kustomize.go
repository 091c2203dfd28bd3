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

// repoDir is where the checkout is in the file system kustomize builds from; the operator's own
// kustomization is at that file system's root, above it.
const repoDir = "repo"

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
	mem, root, cleanup, err := buildFS(checkout, in.AllowRemoteBases)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	repo := path.Join(root, repoDir)
	target := path.Join(repo, path.Clean("/"+filepath.ToSlash(in.Path)))
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
		Resources: relative(root, resources),
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
	if err := mem.WriteFile(path.Join(root, "kustomization.yaml"), data); err != nil {
		return nil, err
	}
	// Nothing remote before the build: the walk refuses what kustomize would fetch (git, HTTP) from
	// the target's kustomization and every local one it leads to, and the file system checks any
	// kustomization the walk missed when kustomize reads it.
	guard := newKustomizeGuard(mem, repo, in.AllowRemoteBases)
	if kustomization {
		guard.dir(target)
		if err := guard.err(); err != nil {
			return nil, fmt.Errorf("kustomize %s: %w", in.Path, err)
		}
	}
	opts := krusty.MakeDefaultOptions()
	// Each kustomization reads files under its own directory only, as kustomize build does by default;
	// builtin plugins only (no exec, Go or KRM function plugins) and no Helm inflation.
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	res, err := krusty.MakeKustomizer(opts).Run(guardedFS{FileSystem: mem, g: guard}, root)
	if gerr := guard.err(); gerr != nil {
		return nil, fmt.Errorf("kustomize %s: %w", in.Path, gerr)
	}
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

// relative makes paths of the file system relative to the overlay at root.
func relative(root string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
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

// buildFS is the file system kustomize builds from, its root, and what removes it: the checkout's
// regular files under root/repo. It is in memory, so that nothing of the operator's disk can be read,
// unless remote bases are allowed: kustomize clones them onto the disk and reads them from its file
// system, so the checkout is then copied into a temporary directory.
func buildFS(checkout string, onDisk bool) (filesys.FileSystem, string, func(), error) {
	if !onDisk {
		mem := filesys.MakeFsInMemory()
		return mem, "/", func() {}, copyInto(mem, checkout, path.Join("/", repoDir))
	}
	tmp, err := os.MkdirTemp("", "catalyst-kustomize-")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	disk := filesys.MakeFsOnDisk()
	if err := copyInto(disk, checkout, path.Join(filepath.ToSlash(tmp), repoDir)); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return disk, filepath.ToSlash(tmp), cleanup, nil
}

// copyInto copies a checkout (regular files only) into dest of fsys.
func copyInto(mem filesys.FileSystem, dir, dest string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		target := path.Join(dest, filepath.ToSlash(rel))
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
}
