package openshift

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// dockerfileCopies are the COPY and ADD instructions of a Dockerfile that read the build context, with the
// labels of its final stage.
type dockerfileCopies struct {
	copies []struct{ src, dest string }
	labels map[string]string
}

func parseCopies(t testing.TB, file string) dockerfileCopies {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	d := dockerfileCopies{labels: map[string]string{}}
	for i, st := range stages {
		for _, c := range st.Commands {
			var sd instructions.SourcesAndDest
			switch c := c.(type) {
			case *instructions.CopyCommand:
				if c.From != "" {
					continue
				}
				sd = c.SourcesAndDest
			case *instructions.AddCommand:
				sd = c.SourcesAndDest
			case *instructions.LabelCommand:
				if i == len(stages)-1 {
					for _, kv := range c.Labels {
						d.labels[kv.Key] = kv.Value
					}
				}
				continue
			default:
				continue
			}
			for _, src := range sd.SourcePaths {
				d.copies = append(d.copies, struct{ src, dest string }{src, sd.DestPath})
			}
		}
	}
	return d
}

// checkContext checks that a build context holds every file its Dockerfile copies and that no ignore file
// the builder reads (<Dockerfile>.dockerignore before .dockerignore, as BuildKit and buildah do) leaves one out.
func checkContext(t testing.TB, ctx, dockerfile string) dockerfileCopies {
	t.Helper()
	d := parseCopies(t, filepath.Join(ctx, dockerfile))
	var patterns []string
	for _, name := range []string{dockerfile + ".dockerignore", ".dockerignore"} {
		f, err := os.Open(filepath.Join(ctx, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		patterns, err = ignorefile.ReadAll(f)
		_ = f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		break
	}
	ignore, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.copies) == 0 {
		t.Errorf("%s copies nothing from its build context", dockerfile)
	}
	for _, c := range d.copies {
		if strings.Contains(c.src, "://") {
			t.Errorf("%s: ADD %s fetches from the network: the build uses only the uploaded context", dockerfile, c.src)
			continue
		}
		rel := path.Clean(c.src)
		if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Errorf("%s: COPY %s reaches outside the build context", dockerfile, c.src)
			continue
		}
		if _, err := os.Stat(filepath.Join(ctx, filepath.FromSlash(rel))); err != nil {
			t.Errorf("%s: COPY %s: the build context %s lacks it: %v", dockerfile, c.src, ctx, err)
		}
		if excluded, err := ignore.MatchesOrParentMatches(rel); err != nil {
			t.Fatal(err)
		} else if excluded {
			t.Errorf("%s: COPY %s: the build context's ignore file leaves it out", dockerfile, c.src)
		}
	}
	return d
}

// listFiles lists the regular files under dir, relative and slash-separated.
func listFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkRendered checks that rendered/<sub> is committed/<sub> with each key of replace replaced by its
// value, file by file, and that the replacements did something.
func checkRendered(t testing.TB, committed, rendered string, replace map[string]string) {
	t.Helper()
	want, got := listFiles(t, committed), listFiles(t, rendered)
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("rendered %s holds %q, the committed %s %q", rendered, got, committed, want)
	}
	replaced := false
	for _, f := range want {
		orig, err := os.ReadFile(filepath.Join(committed, f))
		if err != nil {
			t.Fatal(err)
		}
		exp := string(orig)
		for from, to := range replace {
			if strings.Contains(exp, from) {
				replaced = true
				exp = strings.ReplaceAll(exp, from, to)
			}
		}
		out, err := os.ReadFile(filepath.Join(rendered, f))
		if err != nil {
			t.Errorf("rendered %s: %v", f, err)
			continue
		}
		if string(out) != exp {
			t.Errorf("rendered %s is not the committed file with %v replaced", f, replace)
		}
	}
	if !replaced {
		t.Errorf("the committed %s names none of %v: the rendered copy would still name the public images", committed, replace)
	}
}

// checkNoPublicImages fails for every mention of the public image repository in files under dir.
func checkNoPublicImages(t testing.TB, dir, publicRepo string) {
	t.Helper()
	for _, f := range listFiles(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(publicRepo)) {
			t.Errorf("%s still names %s: the cluster would pull it from outside", f, publicRepo)
		}
	}
}

// embeddedObjects decodes the olm.bundle.object properties of a catalog bundle: the manifests OLM installs
// from when the bundle has no image to unpack.
func embeddedObjects(t testing.TB, b fbcBlob) []string {
	t.Helper()
	var objs []string
	for _, p := range b.Properties {
		if p.Type != "olm.bundle.object" {
			continue
		}
		var v struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(p.Value, &v); err != nil {
			t.Fatalf("%s: olm.bundle.object: %v", b.file, err)
		}
		raw, err := base64.StdEncoding.DecodeString(v.Data)
		if err != nil {
			t.Fatalf("%s: olm.bundle.object: %v", b.file, err)
		}
		objs = append(objs, string(raw))
	}
	return objs
}

// TestBuildContexts renders the bundle and catalog build contexts for another project the way the docs do
// (`make openshift-bundle openshift-catalog OPENSHIFT_NAMESPACE=...`) and checks what the bundle and catalog
// builds would upload: their Dockerfiles find every file they copy, the content is the committed bundle and
// catalog with the public images replaced by the project's internal-registry pullspecs, and nothing in them
// (not even the manifests a catalog embeds) still names the public images.
func TestBuildContexts(t *testing.T) {
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "openshift")
	overrides := []string{"OPENSHIFT_NAMESPACE=" + otherNamespace, "OPENSHIFT_DIR=" + out}
	runMake(t, append([]string{"openshift-bundle", "openshift-catalog"}, overrides...)...)
	vars := makeVars(t, []string{"IMAGE_TAG_BASE", "IMG", "BUNDLE_IMG", "OPENSHIFT_IMG", "OPENSHIFT_BUNDLE_IMG"}, overrides...)
	for _, k := range []string{"OPENSHIFT_IMG", "OPENSHIFT_BUNDLE_IMG"} {
		if !strings.HasPrefix(vars[k], internalRegistry+"/"+otherNamespace+"/") {
			t.Fatalf("%s=%s is not in project %s of the internal registry", k, vars[k], otherNamespace)
		}
	}

	publicRepo := vars["IMAGE_TAG_BASE"]

	// The operator and fleet agent builds upload the checkout itself (--from-dir=.): each Dockerfile, with
	// the ignore file the builder picks for it, finds every file it copies there.
	t.Run("checkout", func(t *testing.T) {
		for _, dockerfile := range []string{"Dockerfile", "fleet-agent.Dockerfile"} {
			checkContext(t, root, dockerfile)
		}
	})

	t.Run("bundle", func(t *testing.T) {
		ctx := filepath.Join(out, "bundle")
		checkContext(t, ctx, "bundle.Dockerfile")
		sameFile(t, filepath.Join(root, "bundle.Dockerfile"), filepath.Join(ctx, "bundle.Dockerfile"))
		checkRendered(t, filepath.Join(root, "bundle"), filepath.Join(ctx, "bundle"), map[string]string{vars["IMG"]: vars["OPENSHIFT_IMG"]})
		// What OLM applies. (tests/scorecard names the scorecard test image, which only
		// `operator-sdk scorecard` runs, not the installation.)
		checkNoPublicImages(t, filepath.Join(ctx, "bundle", "manifests"), publicRepo)

		csv, _ := bundleCSV(t, filepath.Join(ctx, "bundle"))
		var images []string
		for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			for _, c := range d.Spec.Template.Spec.Containers {
				images = append(images, c.Image)
			}
		}
		if !slices.Contains(images, vars["OPENSHIFT_IMG"]) {
			t.Errorf("the rendered CSV's deployments run %q, want the operator image %s", images, vars["OPENSHIFT_IMG"])
		}
	})

	t.Run("catalog", func(t *testing.T) {
		ctx := filepath.Join(out, "catalog")
		d := checkContext(t, ctx, "catalog.Dockerfile")
		sameFile(t, filepath.Join(root, "catalog.Dockerfile"), filepath.Join(ctx, "catalog.Dockerfile"))
		checkNoPublicImages(t, ctx, publicRepo)

		// The catalog image serves the directory it copies catalog/ to (opm serve reads the label's path).
		const configsLabel = "operators.operatorframework.io.index.configs.v1"
		configs, ok := d.labels[configsLabel]
		if !ok {
			t.Errorf("catalog.Dockerfile has no LABEL %s: OLM and opm cannot find the catalog in the image", configsLabel)
		}
		copied := false
		for _, c := range d.copies {
			if path.Clean(c.src) == "catalog" && path.Clean(c.dest) == path.Clean(configs) {
				copied = true
			}
		}
		if ok && !copied {
			t.Errorf("catalog.Dockerfile labels %s=%s but does not copy catalog/ there", configsLabel, configs)
		}

		committed, rendered := readCatalog(t, filepath.Join(root, "catalog")), readCatalog(t, filepath.Join(ctx, "catalog"))
		key := func(b fbcBlob) string { return b.Schema + " " + b.Package + " " + b.Name }
		var wantKeys, gotKeys []string
		for _, b := range committed {
			wantKeys = append(wantKeys, key(b))
		}
		bundles := 0
		for _, b := range rendered {
			gotKeys = append(gotKeys, key(b))
			if b.Schema != "olm.bundle" || b.Package != packageName {
				continue
			}
			bundles++
			objs := embeddedObjects(t, b)
			switch {
			case b.Image == "" && len(objs) == 0:
				t.Errorf("catalog bundle %s has neither an image nor embedded manifests", b.Name)
			case b.Image != "" && b.Image != vars["OPENSHIFT_BUNDLE_IMG"]:
				t.Errorf("catalog bundle %s has image %s, want the bundle build's %s", b.Name, b.Image, vars["OPENSHIFT_BUNDLE_IMG"])
			}
			for _, o := range objs {
				if strings.Contains(o, publicRepo) {
					t.Errorf("catalog bundle %s embeds a manifest naming %s", b.Name, publicRepo)
				}
				if strings.Contains(o, `"ClusterServiceVersion"`) && !strings.Contains(o, vars["OPENSHIFT_IMG"]) {
					t.Errorf("catalog bundle %s embeds a CSV that does not run %s", b.Name, vars["OPENSHIFT_IMG"])
				}
			}
		}
		slices.Sort(wantKeys)
		slices.Sort(gotKeys)
		if !slices.Equal(wantKeys, gotKeys) {
			t.Errorf("the rendered catalog holds %q, the committed one %q: only image references should differ", gotKeys, wantKeys)
		}
		if bundles == 0 {
			t.Errorf("the rendered catalog has no bundle of package %s", packageName)
		}
	})
}

func sameFile(t testing.TB, want, got string) {
	t.Helper()
	a, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s differs from the committed %s", got, want)
	}
}
