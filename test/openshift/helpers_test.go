package openshift

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	buildv1 "github.com/openshift/api/build/v1"
	imagev1 "github.com/openshift/api/image/v1"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

const (
	// internalRegistry is the in-cluster address of OpenShift's image registry: every pullspec the builds,
	// the bundle, the catalog and the CatalogSource use starts with it.
	internalRegistry = "image-registry.openshift-image-registry.svc:5000"
	// packageName is the OLM package, as bundle.Dockerfile labels it.
	packageName = "platform-operator"
	// otherNamespace is a project other than the default one, to prove that OPENSHIFT_NAMESPACE reaches
	// every namespace-dependent field.
	otherNamespace = "irc-team-b"
)

// kustomizations are the entry points under config/openshift.
var kustomizations = []string{".", "build", "olm", "git"}

// repoRoot is the root module's directory.
func repoRoot(t testing.TB) string { return testutil.RepoRoot(t) }

// manifests are the objects of one rendered kustomization (or one file), decoded strictly into their types.
type manifests struct {
	BuildConfigs   []*buildv1.BuildConfig
	ImageStreams   []*imagev1.ImageStream
	CatalogSources []*operatorsv1alpha1.CatalogSource
	Subscriptions  []*operatorsv1alpha1.Subscription
	OperatorGroups []*operatorsv1.OperatorGroup
}

// objects lists every object's metadata with its kind, in document order per kind.
func (m manifests) objects() []struct {
	Kind string
	Meta *metav1.ObjectMeta
} {
	type obj = struct {
		Kind string
		Meta *metav1.ObjectMeta
	}
	var out []obj
	for _, o := range m.BuildConfigs {
		out = append(out, obj{"BuildConfig", &o.ObjectMeta})
	}
	for _, o := range m.ImageStreams {
		out = append(out, obj{"ImageStream", &o.ObjectMeta})
	}
	for _, o := range m.CatalogSources {
		out = append(out, obj{"CatalogSource", &o.ObjectMeta})
	}
	for _, o := range m.Subscriptions {
		out = append(out, obj{"Subscription", &o.ObjectMeta})
	}
	for _, o := range m.OperatorGroups {
		out = append(out, obj{"OperatorGroup", &o.ObjectMeta})
	}
	return out
}

func (m manifests) buildConfig(name string) *buildv1.BuildConfig {
	for _, bc := range m.BuildConfigs {
		if bc.Name == name {
			return bc
		}
	}
	return nil
}

func (m manifests) imageStream(name string) *imagev1.ImageStream {
	for _, is := range m.ImageStreams {
		if is.Name == name {
			return is
		}
	}
	return nil
}

// kindsDecoded maps every kind config/openshift may hold to the type it must decode into without unknown or
// duplicate fields. Anything else is an error: a kind added here needs its checks too.
var kindsDecoded = map[schema.GroupVersionKind]func(m *manifests, data []byte) error{
	buildv1.GroupVersion.WithKind("BuildConfig"): decodeInto(func(m *manifests) *[]*buildv1.BuildConfig { return &m.BuildConfigs }),
	imagev1.GroupVersion.WithKind("ImageStream"): decodeInto(func(m *manifests) *[]*imagev1.ImageStream { return &m.ImageStreams }),
	operatorsv1alpha1.SchemeGroupVersion.WithKind("CatalogSource"): decodeInto(func(m *manifests) *[]*operatorsv1alpha1.CatalogSource {
		return &m.CatalogSources
	}),
	operatorsv1alpha1.SchemeGroupVersion.WithKind("Subscription"): decodeInto(func(m *manifests) *[]*operatorsv1alpha1.Subscription {
		return &m.Subscriptions
	}),
	operatorsv1.GroupVersion.WithKind("OperatorGroup"): decodeInto(func(m *manifests) *[]*operatorsv1.OperatorGroup { return &m.OperatorGroups }),
}

// decodeInto decodes a document strictly into a new T appended to the list of m that field names.
func decodeInto[T any](field func(m *manifests) *[]*T) func(m *manifests, data []byte) error {
	return func(m *manifests, data []byte) error {
		o := new(T)
		*field(m) = append(*field(m), o)
		return yaml.UnmarshalStrict(data, o)
	}
}

// splitDocuments splits a YAML stream at `---`, dropping documents that hold only comments or whitespace.
func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var probe any
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			return nil, err
		}
		if probe != nil {
			docs = append(docs, doc)
		}
	}
}

// decodeManifests decodes every document of data strictly; name says where data came from in messages.
func decodeManifests(t testing.TB, name string, data []byte) manifests {
	t.Helper()
	docs, err := splitDocuments(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var m manifests
	for i, doc := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s, document %d: %v", name, i+1, err)
		}
		decode, ok := kindsDecoded[tm.GroupVersionKind()]
		if !ok {
			t.Errorf("%s, document %d: unexpected %s %s; config/openshift holds only BuildConfigs, ImageStreams, "+
				"CatalogSources, Subscriptions and OperatorGroups", name, i+1, tm.APIVersion, tm.Kind)
			continue
		}
		if err := decode(&m, doc); err != nil {
			t.Errorf("%s, document %d (%s): %v", name, i+1, tm.Kind, err)
		}
	}
	return m
}

// kustomizeBuild renders a kustomization with the kustomize API that bin/kustomize-v5.7.1 (and kubectl and
// oc apply -k) are built from, with the same default options.
func kustomizeBuild(t testing.TB, dir string) []byte {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return out
}

// makeEnv is the environment for a nested make: without the MAKEFLAGS of a `make test` that runs these tests,
// so the nested make sees the Makefile's defaults (what the committed files must match) and no jobserver.
func makeEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "MAKEFLAGS" || k == "MFLAGS" || k == "MAKELEVEL" || k == "MAKEOVERRIDES" || k == "GNUMAKEFLAGS"
	})
}

// runMake runs make in the repository root and returns its standard output.
func runMake(t testing.TB, args ...string) string {
	t.Helper()
	root := repoRoot(t)
	cmd := exec.Command("make", append([]string{"-s", "--no-print-directory", "-C", root}, args...)...)
	cmd.Env = makeEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// params are the values of config/openshift/params/params.env.
type params map[string]string

var paramKeys = []string{"namespace", "operatorImage", "bundleImage", "catalogImage", "fleetAgentImage", "channel", "gitURI", "gitRef"}

func readParams(t testing.TB, file string) params {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := params{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: not KEY=value: %q", file, i+1, line)
		}
		if _, dup := p[k]; dup {
			t.Fatalf("%s:%d: %s set twice", file, i+1, k)
		}
		p[k] = v
	}
	for _, k := range paramKeys {
		if p[k] == "" {
			t.Errorf("%s: %s is missing or empty", file, k)
		}
	}
	for k := range p {
		if !slices.Contains(paramKeys, k) {
			t.Errorf("%s: unexpected key %s (the kustomizations read only %s)", file, k, strings.Join(paramKeys, ", "))
		}
	}
	return p
}

// copyTree copies the regular files under src to dst.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rendering is config/openshift as it renders for one project.
type rendering struct {
	namespace string
	// dir holds the kustomizations: the committed config/openshift for the default project, a copy with
	// params.env regenerated by `make openshift-params` for another.
	dir    string
	params params
	// out is each kustomization's rendered output, by entry point.
	out map[string]manifests
	raw map[string][]byte
}

// renderDefault renders the committed config/openshift as it is.
func renderDefault(t testing.TB) rendering {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "config", "openshift")
	return render(t, dir)
}

// renderFor renders config/openshift for another project, with params.env written by the Makefile for it.
func renderFor(t testing.TB, namespace string) rendering {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "openshift")
	copyTree(t, filepath.Join(repoRoot(t), "config", "openshift"), dir)
	runMake(t, "openshift-params", "OPENSHIFT_NAMESPACE="+namespace, "OPENSHIFT_PARAMS="+filepath.Join(dir, "params", "params.env"))
	return render(t, dir)
}

func render(t testing.TB, dir string) rendering {
	t.Helper()
	r := rendering{dir: dir, params: readParams(t, filepath.Join(dir, "params", "params.env")),
		out: map[string]manifests{}, raw: map[string][]byte{}}
	r.namespace = r.params["namespace"]
	for _, k := range kustomizations {
		out := kustomizeBuild(t, filepath.Join(dir, k))
		r.raw[k] = out
		r.out[k] = decodeManifests(t, "kustomize build config/openshift/"+k, out)
	}
	return r
}
