package render

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// RemoteRefusedError is the error of a kustomize build refused before it ran: Entries name, each with
// its kustomization file (relative to the repository), what kustomize would have fetched from elsewhere
// or read outside the repository, or could only build by running a program.
type RemoteRefusedError struct {
	Entries []string
}

func (e *RemoteRefusedError) Error() string {
	return "the kustomization reaches outside the repository, which the operator does not do: " + strings.Join(e.Entries, "; ")
}

// kustomizeGuard walks the kustomizations a build reads, from the target's on, before kustomize runs:
// kustomize fetches a remote base by running git and a remote file with an HTTP GET, so a tenant's
// kustomization would otherwise make the operator send requests the tenant chooses. It refuses remote
// entries (unless allowRemote, and then only in resources, bases and components), entries leading out of
// the repository, and Helm chart inflation (kustomize would run helm).
type kustomizeGuard struct {
	fs filesys.FileSystem
	// repo is the repository's root in fs.
	repo        string
	allowRemote bool
	seen        map[string]bool
	refused     []string
}

func newKustomizeGuard(fs filesys.FileSystem, repo string, allowRemote bool) *kustomizeGuard {
	return &kustomizeGuard{fs: fs, repo: repo, allowRemote: allowRemote, seen: map[string]bool{}}
}

// err is the refusals so far as one error; nil when none.
func (g *kustomizeGuard) err() error {
	if len(g.refused) == 0 {
		return nil
	}
	return &RemoteRefusedError{Entries: slices.Clone(g.refused)}
}

// scpUser is the user@ of scp-style git addresses (git@github.com:org/repo), which kustomize clones.
var scpUser = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*@`)

// remote says whether kustomize would fetch entry rather than read the file system: a URL of any
// scheme, a git address (git::, user@host:, github.com/...), or anything with a query (?ref=).
func remote(entry string) bool {
	e := strings.ToLower(strings.TrimSpace(entry))
	if u, err := url.Parse(e); err == nil && u.Scheme != "" {
		return true
	}
	return strings.Contains(e, "://") || strings.HasPrefix(e, "git::") ||
		strings.HasPrefix(e, "github.com/") || strings.HasPrefix(e, "github.com:") ||
		scpUser.MatchString(e) || strings.Contains(e, "?")
}

// within says whether p is dir or under it.
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// kustomizationFile is the kustomization file of dir, or "" when it holds none.
func (g *kustomizeGuard) kustomizationFile(dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if f := path.Join(dir, name); g.fs.Exists(f) && !g.fs.IsDir(f) {
			return f
		}
	}
	return ""
}

// rel is p relative to the repository, for messages.
func (g *kustomizeGuard) rel(p string) string {
	if r := strings.TrimPrefix(p, strings.TrimSuffix(g.repo, "/")+"/"); r != p {
		return r
	}
	return p
}

// dir checks the kustomization of dir (nothing when dir holds none: kustomize then fails on its own) and
// every local kustomization it leads to.
func (g *kustomizeGuard) dir(dir string) {
	dir = path.Clean(dir)
	if g.seen[dir] {
		return
	}
	g.seen[dir] = true
	file := g.kustomizationFile(dir)
	if file == "" {
		return
	}
	if g.allowRemote && !within(g.repo, dir) {
		// A remote base's clone: kustomize keeps it inside its clone and root-only on its own.
		return
	}
	data, err := g.fs.ReadFile(file)
	if err != nil {
		g.refused = append(g.refused, fmt.Sprintf("%s (%v)", g.rel(file), err))
		return
	}
	// The same decoding kustomize does, so that what is checked is what it reads.
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		g.refused = append(g.refused, fmt.Sprintf("%s (%v)", g.rel(file), err))
		return
	}
	k.FixKustomization()
	c := kustomizationCheck{g: g, dir: dir, file: g.rel(file)}
	for _, e := range k.Resources {
		c.entry("resources", e, g.allowRemote, true)
	}
	for _, e := range k.Components {
		c.entry("components", e, g.allowRemote, true)
	}
	for field, list := range map[string][]string{"generators": k.Generators, "transformers": k.Transformers, "validators": k.Validators} {
		for _, e := range list {
			if docs, ok := inlineConfig(e); ok {
				c.pluginConfig(field, docs)
				continue
			}
			if target := c.entry(field, e, false, true); target != "" && !g.fs.IsDir(target) {
				if data, err := g.fs.ReadFile(target); err == nil {
					docs, _ := inlineConfig(string(data))
					c.pluginConfig(field, docs)
				}
			}
		}
	}
	for _, e := range k.Crds {
		c.entry("crds", e, false, false)
	}
	for _, e := range k.Configurations {
		c.entry("configurations", e, false, false)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		c.entry("openapi.path", p, false, false)
	}
	// The deprecated fields are still honoured by kustomize, so a tenant may still use them: check them too.
	for _, p := range append(slices.Clone(k.Patches), k.PatchesJson6902...) { //nolint:staticcheck // the deprecated field is read to refuse what it names

		if p.Path != "" {
			c.entry("patches", p.Path, false, false)
		}
	}
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // the deprecated field is read to refuse what it names
		if s := string(p); !strings.Contains(s, "\n") {
			c.entry("patchesStrategicMerge", s, false, false)
		}
	}
	for _, r := range k.Replacements {
		if r.Path != "" {
			c.entry("replacements", r.Path, false, false)
		}
	}
	for _, gen := range k.ConfigMapGenerator {
		c.sources("configMapGenerator", gen.KvPairSources)
	}
	for _, gen := range k.SecretGenerator {
		c.sources("secretGenerator", gen.KvPairSources)
	}
	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil {
		c.refuse("helmCharts", "kustomize would run helm; use the Project's deployment type helm")
	}
	slices.Sort(g.refused)
	g.refused = slices.Compact(g.refused)
}

// kustomizationCheck checks the entries of one kustomization.
type kustomizationCheck struct {
	g    *kustomizeGuard
	dir  string
	file string
}

func (c kustomizationCheck) refuse(field, why string) {
	c.g.refused = append(c.g.refused, fmt.Sprintf("%s: %s (%s)", c.file, field, why))
}

// entry checks one path entry of field and returns its path in the file system, or "" when it is not a
// local path inside the repository (refused, or remote and allowed). A local directory entry that may be
// a kustomization (recurse) is checked in turn.
func (c kustomizationCheck) entry(field, e string, remoteAllowed, recurse bool) string {
	switch {
	case remote(e) && remoteAllowed:
		return ""
	case remote(e):
		why := "remote: the operator fetches nothing a repository names"
		if field == "resources" || field == "components" {
			why += "; its administrator may allow remote bases (--catalyst-allow-remote-bases)"
		}
		c.refuse(field, fmt.Sprintf("%q is %s", e, why))
		return ""
	case path.IsAbs(e):
		c.refuse(field, fmt.Sprintf("%q is an absolute path; name files relative to the kustomization", e))
		return ""
	}
	target := path.Join(c.dir, e)
	if !within(c.g.repo, target) {
		c.refuse(field, fmt.Sprintf("%q leads outside the repository", e))
		return ""
	}
	if recurse && c.g.fs.IsDir(target) {
		c.g.dir(target)
	}
	return target
}

// sources checks a generator's files and env files.
func (c kustomizationCheck) sources(field string, s types.KvPairSources) {
	for _, f := range s.FileSources {
		if _, file, found := strings.Cut(f, "="); found {
			f = file
		}
		c.entry(field+".files", f, false, false)
	}
	for _, f := range append(slices.Clone(s.EnvSources), s.EnvSource) {
		if f != "" {
			c.entry(field+".envs", f, false, false)
		}
	}
}

// pluginConfig checks the builtin plugin configurations of a generators, transformers or validators
// entry: no Helm inflation, and the files they name (path, files, envs) local to the repository.
func (c kustomizationCheck) pluginConfig(field string, docs []map[string]any) {
	for _, d := range docs {
		if kind, _ := d["kind"].(string); kind == "HelmChartInflationGenerator" {
			c.refuse(field, "HelmChartInflationGenerator would run helm; use the Project's deployment type helm")
		}
		walkPaths(d, func(key, value string) {
			if key == "files" {
				if _, file, found := strings.Cut(value, "="); found {
					value = file
				}
			}
			c.entry(field+" "+key, value, false, false)
		})
	}
}

// walkPaths calls f with every string under a key that names files in kustomize's builtin plugin
// configurations.
func walkPaths(v any, f func(key, value string)) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			switch k {
			case "path", "paths", "files", "envs", "env", "chartHome", "valuesFile", "additionalValuesFiles":
				for _, s := range anyStrings(t[k]) {
					f(k, s)
				}
			default:
				walkPaths(t[k], f)
			}
		}
	case []any:
		for _, e := range t {
			walkPaths(e, f)
		}
	}
}

// anyStrings is a string or a list's strings.
func anyStrings(v any) []string {
	if s, ok := v.(string); ok {
		return []string{s}
	}
	return stringList(v)
}

// inlineConfig parses s as YAML documents of maps, as kustomize tries a generators entry before taking
// it for a path; ok is false when s is not one.
func inlineConfig(s string) (docs []map[string]any, ok bool) {
	for _, part := range strings.Split(s, "\n---") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(part), &m); err != nil || m == nil {
			return nil, false
		}
		docs = append(docs, m)
	}
	return docs, len(docs) > 0
}

// guardedFS is kustomize's file system with the guard on every kustomization file kustomize reads: a
// kustomization the walk did not reach before the build is checked when kustomize reaches it, before
// kustomize acts on any of its entries.
type guardedFS struct {
	filesys.FileSystem
	g *kustomizeGuard
}

func (f guardedFS) ReadFile(name string) ([]byte, error) {
	if slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(name)) {
		f.g.dir(path.Dir(name))
		if err := f.g.err(); err != nil {
			return nil, err
		}
	}
	return f.FileSystem.ReadFile(name)
}
