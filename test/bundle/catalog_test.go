package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The file-based catalog's blobs, as opm writes them (alpha/declcfg), with the fields checked here.
type (
	fbcPackage struct {
		Name           string `json:"name"`
		DefaultChannel string `json:"defaultChannel"`
		Icon           *struct {
			Data      string `json:"base64data"`
			MediaType string `json:"mediatype"`
		} `json:"icon"`
	}
	fbcEntry struct {
		Name      string   `json:"name"`
		Replaces  string   `json:"replaces"`
		Skips     []string `json:"skips"`
		SkipRange string   `json:"skipRange"`
	}
	fbcChannel struct {
		Package string     `json:"package"`
		Name    string     `json:"name"`
		Entries []fbcEntry `json:"entries"`
	}
	fbcProperty struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	fbcBundle struct {
		Name          string        `json:"name"`
		Package       string        `json:"package"`
		Image         string        `json:"image"`
		Properties    []fbcProperty `json:"properties"`
		RelatedImages []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"relatedImages"`
	}
	catalog struct {
		packages []fbcPackage
		channels []fbcChannel
		bundles  []fbcBundle
	}
)

// loadCatalog reads every YAML document under catalog/, as `opm serve` would.
func loadCatalog(t *testing.T) catalog {
	t.Helper()
	var c catalog
	root := filepath.Join(repoRoot(t), "catalog")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				break
			}
			var meta struct {
				Schema string `json:"schema"`
			}
			if err := json.Unmarshal(raw, &meta); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			var target any
			switch meta.Schema {
			case "olm.package":
				c.packages = append(c.packages, fbcPackage{})
				target = &c.packages[len(c.packages)-1]
			case "olm.channel":
				c.channels = append(c.channels, fbcChannel{})
				target = &c.channels[len(c.channels)-1]
			case "olm.bundle":
				c.bundles = append(c.bundles, fbcBundle{})
				target = &c.bundles[len(c.bundles)-1]
			default:
				return fmt.Errorf("%s: unexpected schema %q", p, meta.Schema)
			}
			if err := json.Unmarshal(raw, target); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (b fbcBundle) property(t *testing.T, typ string, into any) bool {
	t.Helper()
	for _, p := range b.Properties {
		if p.Type == typ {
			if err := json.Unmarshal(p.Value, into); err != nil {
				t.Fatalf("bundle %s property %s: %v", b.Name, typ, err)
			}
			return true
		}
	}
	return false
}

func (b fbcBundle) version(t *testing.T) semver.Version {
	t.Helper()
	var pkg struct {
		PackageName string `json:"packageName"`
		Version     string `json:"version"`
	}
	if !b.property(t, "olm.package", &pkg) || pkg.PackageName != packageName {
		t.Fatalf("bundle %s has no olm.package property of package %s", b.Name, packageName)
	}
	v, err := semver.Parse(pkg.Version)
	if err != nil {
		t.Fatalf("bundle %s: %v", b.Name, err)
	}
	return v
}

// TestCatalogPackage: one package, whose default channel is the bundle's, with the CSV's icon.
func TestCatalogPackage(t *testing.T) {
	c := loadCatalog(t)
	if len(c.packages) != 1 || c.packages[0].Name != packageName {
		t.Fatalf("packages %+v, want exactly %s", c.packages, packageName)
	}
	p := c.packages[0]
	if def := bundleAnnotations(t)["operators.operatorframework.io.bundle.channel.default.v1"]; p.DefaultChannel != def {
		t.Errorf("default channel %q, the bundle's is %q", p.DefaultChannel, def)
	}
	svg := base64.StdEncoding.EncodeToString(readFile(t, "config/manifests/bases/icon.svg"))
	if p.Icon == nil || p.Icon.Data != svg || p.Icon.MediaType != "image/svg+xml" {
		t.Error("the package's icon is not config/manifests/bases/icon.svg")
	}
	for _, b := range c.bundles {
		if b.Package != packageName {
			t.Errorf("bundle %s belongs to package %q", b.Name, b.Package)
		}
	}
}

// TestCatalogServesTheBundle: the catalog has this bundle's version, rendered from bundle/ (its CSV
// metadata is the CSV's), naming the bundle image BUNDLE_IMG and every image the bundle uses, in every
// channel the bundle's annotations name.
func TestCatalogServesTheBundle(t *testing.T) {
	c := loadCatalog(t)
	csv := loadCSV(t)
	name := fmt.Sprintf("%s.v%s", packageName, csv.Spec.Version)
	i := slices.IndexFunc(c.bundles, func(b fbcBundle) bool { return b.Name == name })
	if i < 0 {
		t.Fatalf("the catalog has no bundle %s (run make catalog)", name)
	}
	b := c.bundles[i]
	if v := b.version(t); !v.EQ(csv.Spec.Version.Version) {
		t.Errorf("bundle %s has version %s", name, v)
	}
	if want := fmt.Sprintf("%s-bundle:v%s", imageBase, csv.Spec.Version); b.Image != want {
		t.Errorf("bundle %s image %q, want %q: the committed catalog names the bundle image (make catalog, CATALOG_BUNDLE_IMAGE)", name, b.Image, want)
	}
	var images []string
	for _, ri := range b.RelatedImages {
		images = append(images, ri.Image)
	}
	for _, want := range []string{b.Image, operatorContainer(t, csv).Image, csv.Spec.RelatedImages[0].Image} {
		if !slices.Contains(images, want) {
			t.Errorf("bundle %s relatedImages %q lack %s", name, images, want)
		}
	}

	var meta map[string]any
	if !b.property(t, "olm.csv.metadata", &meta) {
		t.Fatalf("bundle %s has no olm.csv.metadata", name)
	}
	var csvMap map[string]any
	data, err := json.Marshal(csv)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &csvMap); err != nil {
		t.Fatal(err)
	}
	spec := csvMap["spec"].(map[string]any)
	objMeta := csvMap["metadata"].(map[string]any)
	for key, want := range map[string]any{
		"annotations": objMeta["annotations"], "labels": objMeta["labels"], "description": spec["description"],
		"displayName": spec["displayName"], "installModes": spec["installModes"], "keywords": spec["keywords"],
		"maturity": spec["maturity"], "minKubeVersion": spec["minKubeVersion"], "provider": spec["provider"],
		"crdDescriptions": spec["customresourcedefinitions"], "links": spec["links"], "maintainers": spec["maintainers"],
	} {
		if !reflect.DeepEqual(meta[key], want) {
			t.Errorf("bundle %s olm.csv.metadata %s differs from the CSV's (run make catalog)", name, key)
		}
	}

	for _, ch := range strings.Split(bundleAnnotations(t)["operators.operatorframework.io.bundle.channels.v1"], ",") {
		j := slices.IndexFunc(c.channels, func(c fbcChannel) bool { return c.Name == ch })
		if j < 0 || !slices.ContainsFunc(c.channels[j].Entries, func(e fbcEntry) bool { return e.Name == name }) {
			t.Errorf("channel %s does not offer %s", ch, name)
		}
	}
}

// TestCatalogUpgradeGraph: in every channel, from every version, OLM can upgrade to the channel's head,
// and the head's skipRange takes in every lower version, including versions no longer in the catalog, so
// no installation is stranded.
func TestCatalogUpgradeGraph(t *testing.T) {
	c := loadCatalog(t)
	versions := map[string]semver.Version{}
	for _, b := range c.bundles {
		versions[b.Name] = b.version(t)
	}
	if len(c.channels) == 0 {
		t.Fatal("the catalog has no channel")
	}
	for _, ch := range c.channels {
		for _, p := range graphProblems(ch, versions) {
			t.Errorf("channel %s: %s", ch.Name, p)
		}
	}
}

// graphProblems returns why a channel could strand an installation.
func graphProblems(ch fbcChannel, versions map[string]semver.Version) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	entries := map[string]fbcEntry{}
	replaced := map[string]bool{}
	for _, e := range ch.Entries {
		if _, ok := versions[e.Name]; !ok {
			bad("entry %s has no bundle in the catalog", e.Name)
			return problems
		}
		entries[e.Name] = e
		if e.Replaces != "" {
			replaced[e.Replaces] = true
		}
		for _, s := range e.Skips {
			replaced[s] = true
		}
	}
	var heads []string
	for name := range entries {
		if !replaced[name] {
			heads = append(heads, name)
		}
	}
	slices.Sort(heads)
	if len(heads) != 1 {
		bad("channel heads %q, want exactly one", heads)
		return problems
	}
	head := heads[0]
	for name := range entries {
		if versions[name].GT(versions[head]) {
			bad("head %s is not the channel's highest version: %s is", head, name)
		}
	}

	// upgradesFrom are the entries OLM offers to an installation of version v (named name, if it is
	// in the catalog): those that replace or skip it, or whose skipRange takes it in.
	upgradesFrom := func(name string, v semver.Version) []string {
		var out []string
		for _, e := range entries {
			if e.Name == name {
				continue
			}
			inRange := false
			if e.SkipRange != "" {
				r, err := semver.ParseRange(e.SkipRange)
				if err != nil {
					bad("entry %s skipRange %q: %v", e.Name, e.SkipRange, err)
					continue
				}
				inRange = r(v)
			}
			if e.Replaces == name || slices.Contains(e.Skips, name) || inRange {
				out = append(out, e.Name)
			}
		}
		return out
	}
	for _, name := range sortedNames(entries) {
		if name == head {
			continue
		}
		seen := map[string]bool{name: true}
		queue := []string{name}
		for len(queue) > 0 && !seen[head] {
			cur := queue[0]
			queue = queue[1:]
			for _, next := range upgradesFrom(cur, versions[cur]) {
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
		if !seen[head] {
			bad("an installation of %s cannot reach the head %s", name, head)
		}
	}
	// Any version below the head, even one pruned from the catalog or never published in it, upgrades
	// to the head in one step.
	probes := []semver.Version{{Major: 0, Minor: 0, Patch: 0}}
	for _, name := range sortedNames(entries) {
		probes = append(probes, versions[name])
	}
	for _, v := range probes {
		if v.LT(versions[head]) && !slices.Contains(upgradesFrom("", v), head) {
			bad("the head %s's skipRange %q does not take in version %s", head, entries[head].SkipRange, v)
		}
	}
	return problems
}

func sortedNames(m map[string]fbcEntry) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestGraphProblems: the graph check catches the ways a channel strands installations.
func TestGraphProblems(t *testing.T) {
	versions := map[string]semver.Version{}
	for _, v := range []string{"0.1.0", "0.2.0", "0.3.0"} {
		versions[packageName+".v"+v] = semver.MustParse(v)
	}
	e := func(v, replaces, skipRange string) fbcEntry {
		out := fbcEntry{Name: packageName + ".v" + v, SkipRange: skipRange}
		if replaces != "" {
			out.Replaces = packageName + ".v" + replaces
		}
		return out
	}
	tests := []struct {
		name    string
		entries []fbcEntry
		problem string // substring of the one expected problem; empty for none
	}{
		{name: "replaces chain with skipRanges", entries: []fbcEntry{
			e("0.1.0", "", "<0.1.0"), e("0.2.0", "0.1.0", "<0.2.0"), e("0.3.0", "0.2.0", "<0.3.0")}},
		{name: "two heads", entries: []fbcEntry{e("0.1.0", "", "<0.1.0"), e("0.2.0", "", "<0.2.0")},
			problem: "want exactly one"},
		{name: "head's skipRange leaves out old versions", entries: []fbcEntry{
			e("0.1.0", "", "<0.1.0"), e("0.2.0", "0.1.0", ">=0.1.0 <0.2.0")}, problem: "does not take in version 0.0.0"},
		{name: "head is not the highest version", entries: []fbcEntry{
			e("0.3.0", "", "<0.3.0"), e("0.2.0", "0.3.0", "<0.2.0")}, problem: "not the channel's highest"},
		{name: "entry without a bundle", entries: []fbcEntry{{Name: "other.v1.0.0"}}, problem: "no bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := graphProblems(fbcChannel{Name: "candidate-v0", Entries: tt.entries}, versions)
			if tt.problem == "" && len(got) > 0 || tt.problem != "" && (len(got) != 1 || !strings.Contains(got[0], tt.problem)) {
				t.Errorf("problems %q, want %q", got, tt.problem)
			}
		})
	}
}

// TestCatalogDockerfile: catalog.Dockerfile is opm's own (`opm generate dockerfile`) for the pinned opm:
// it serves catalog/ from /configs with a cache built at image build time.
func TestCatalogDockerfile(t *testing.T) {
	stages := parseDockerfile(t, "catalog.Dockerfile")
	opm := "quay.io/operator-framework/opm:" + requiredVersion(t, "hack/tools/opm/go.mod", "github.com/operator-framework/operator-registry")
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a builder and the final image", len(stages))
	}
	var got []string
	for _, s := range stages {
		if s.BaseName != opm {
			t.Errorf("FROM %s, want %s (the opm that renders and validates the catalog)", s.BaseName, opm)
		}
		for _, cmd := range s.Commands {
			if src, ok := cmd.(fmt.Stringer); ok {
				got = append(got, src.String())
			}
		}
	}
	want := []string{
		"ADD catalog /configs",
		`RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]`,
		`ENTRYPOINT ["/bin/opm"]`,
		`CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]`,
		"COPY --from=builder /configs /configs",
		"COPY --from=builder /tmp/cache /tmp/cache",
		"LABEL operators.operatorframework.io.index.configs.v1=/configs",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("catalog.Dockerfile lacks %s; it has %q", w, got)
		}
	}
}
