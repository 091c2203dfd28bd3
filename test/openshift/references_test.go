package openshift

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	buildv1 "github.com/openshift/api/build/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	operatorBuild   = "platform-operator"
	bundleBuild     = "platform-operator-bundle"
	catalogBuild    = "platform-operator-catalog"
	fleetAgentBuild = "platform-operator-fleet-agent"
)

// builds are the four BuildConfigs: the Dockerfile each builds and the params.env key of the pullspec its
// output has in the internal registry.
var builds = []struct{ name, dockerfile, param string }{
	{operatorBuild, "Dockerfile", "operatorImage"},
	{bundleBuild, "bundle.Dockerfile", "bundleImage"},
	{catalogBuild, "catalog.Dockerfile", "catalogImage"},
	{fleetAgentBuild, "fleet-agent.Dockerfile", "fleetAgentImage"},
}

// pullspec is where a build's output lands: the internal registry, the build's project, its ImageStreamTag.
func pullspec(bc *buildv1.BuildConfig) string {
	return internalRegistry + "/" + bc.Namespace + "/" + bc.Spec.Output.To.Name
}

// TestReferences checks that the objects agree with each other and with params.env, for the default
// project and another one: each build pushes to a tag of an image stream that exists, at the pullspec
// params.env names; the CatalogSource serves exactly what the catalog build pushed; the Subscription asks
// that CatalogSource for the Makefile's package and channel; the builds build the repository's Dockerfiles,
// unmodified.
func TestReferences(t *testing.T) {
	root := repoRoot(t)
	for _, r := range []rendering{renderDefault(t), renderFor(t, otherNamespace)} {
		t.Run(r.namespace, func(t *testing.T) {
			m := r.out["."]

			t.Run("builds push to image streams at the params.env pullspecs", func(t *testing.T) {
				if len(m.BuildConfigs) != len(builds) {
					t.Errorf("%d BuildConfigs, want %d", len(m.BuildConfigs), len(builds))
				}
				outputs := map[string]bool{}
				var tags []string
				for _, b := range builds {
					bc := m.buildConfig(b.name)
					if bc == nil {
						t.Errorf("no BuildConfig %s", b.name)
						continue
					}
					if bc.Spec.Output.To == nil {
						continue // validateBuildConfig reports it
					}
					stream, tag, _ := strings.Cut(bc.Spec.Output.To.Name, ":")
					outputs[stream] = true
					tags = append(tags, tag)
					if m.imageStream(stream) == nil {
						t.Errorf("BuildConfig %s pushes to %s, but there is no ImageStream %s", bc.Name, bc.Spec.Output.To.Name, stream)
					}
					if got, want := pullspec(bc), r.params[b.param]; got != want {
						t.Errorf("BuildConfig %s pushes to %s, params.env %s is %s", bc.Name, got, b.param, want)
					}
					if !strings.HasPrefix(r.params[b.param], internalRegistry+"/"+r.namespace+"/") {
						t.Errorf("params.env %s=%s is not in the internal registry under project %s", b.param, r.params[b.param], r.namespace)
					}
				}
				for _, is := range m.ImageStreams {
					if !outputs[is.Name] {
						t.Errorf("ImageStream %s is no build's output", is.Name)
					}
				}
				if len(slices.Compact(slices.Sorted(slices.Values(tags)))) > 1 {
					t.Errorf("the builds push different tags %q: the bundle and catalog of a version go with its operator image", tags)
				}
			})

			t.Run("builds build the repository's Dockerfiles as they are", func(t *testing.T) {
				for _, b := range builds {
					bc := m.buildConfig(b.name)
					if bc == nil || bc.Spec.Strategy.DockerStrategy == nil {
						continue
					}
					ds := bc.Spec.Strategy.DockerStrategy
					if ds.DockerfilePath != b.dockerfile {
						t.Errorf("BuildConfig %s builds %s, want %s", bc.Name, ds.DockerfilePath, b.dockerfile)
					}
					if _, err := os.Stat(filepath.Join(root, b.dockerfile)); err != nil {
						t.Errorf("BuildConfig %s builds %s, which the repository lacks: %v", bc.Name, b.dockerfile, err)
					}
					// strategy.from replaces the last FROM (the operator's distroless, non-root, shell-less base);
					// env and build args add ENV/ARG values to every stage (CGO_ENABLED, GOOS, ...). Either would
					// build something other than what test/dockerfile checks.
					if ds.From != nil {
						t.Errorf("BuildConfig %s sets dockerStrategy.from %s: it would replace the Dockerfile's final FROM", bc.Name, ds.From.Name)
					}
					if len(ds.Env) > 0 || len(ds.BuildArgs) > 0 {
						t.Errorf("BuildConfig %s sets dockerStrategy env %v / buildArgs %v: the Dockerfile alone decides the build", bc.Name, ds.Env, ds.BuildArgs)
					}
					if len(ds.Volumes) > 0 || len(bc.Spec.Source.Secrets) > 0 || len(bc.Spec.Source.ConfigMaps) > 0 || bc.Spec.Source.Dockerfile != nil {
						t.Errorf("BuildConfig %s adds volumes, secrets, config maps or an inline Dockerfile to the build", bc.Name)
					}
					if bc.Spec.RunPolicy != buildv1.BuildRunPolicySerial {
						t.Errorf("BuildConfig %s runs %s: builds of one tag should not race each other", bc.Name, bc.Spec.RunPolicy)
					}
				}
			})

			t.Run("the CatalogSource serves the catalog build's output", func(t *testing.T) {
				if len(m.CatalogSources) != 1 || len(m.Subscriptions) != 1 || len(m.OperatorGroups) != 1 {
					t.Fatalf("%d CatalogSources, %d Subscriptions, %d OperatorGroups; want one of each",
						len(m.CatalogSources), len(m.Subscriptions), len(m.OperatorGroups))
				}
				cs := m.CatalogSources[0]
				if cs.Spec.SourceType != operatorsv1alpha1.SourceTypeGrpc || cs.Spec.Address != "" || cs.Spec.ConfigMap != "" {
					t.Errorf("CatalogSource %s: sourceType %s, address %q, configMap %q; want grpc from an image", cs.Name, cs.Spec.SourceType, cs.Spec.Address, cs.Spec.ConfigMap)
				}
				if bc := m.buildConfig(catalogBuild); bc != nil && bc.Spec.Output.To != nil {
					if want := pullspec(bc); cs.Spec.Image != want {
						t.Errorf("CatalogSource %s image %s, but the catalog build pushes %s", cs.Name, cs.Spec.Image, want)
					}
				}
				if cs.Spec.GrpcPodConfig == nil || cs.Spec.GrpcPodConfig.SecurityContextConfig != operatorsv1alpha1.Restricted {
					t.Errorf("CatalogSource %s: set grpcPodConfig.securityContextConfig: restricted, so the catalog pod passes restricted pod security", cs.Name)
				}
				if cs.Spec.UpdateStrategy == nil || cs.Spec.UpdateStrategy.RegistryPoll == nil || cs.Spec.UpdateStrategy.RawInterval == "" {
					t.Errorf("CatalogSource %s does not poll: a rebuilt catalog tag would never be served", cs.Name)
				}
			})

			t.Run("the Subscription asks that CatalogSource for the package and channel", func(t *testing.T) {
				if len(m.CatalogSources) != 1 || len(m.Subscriptions) != 1 || len(m.OperatorGroups) != 1 {
					t.Skip("reported above")
				}
				cs, sub, og := m.CatalogSources[0], m.Subscriptions[0], m.OperatorGroups[0]
				if sub.Spec == nil {
					t.Fatal("Subscription has no spec")
				}
				if sub.Spec.CatalogSource != cs.Name || sub.Spec.CatalogSourceNamespace != cs.Namespace {
					t.Errorf("Subscription source %s/%s, the CatalogSource is %s/%s", sub.Spec.CatalogSourceNamespace, sub.Spec.CatalogSource, cs.Namespace, cs.Name)
				}
				if sub.Spec.Package != packageName {
					t.Errorf("Subscription package %s, want %s", sub.Spec.Package, packageName)
				}
				if sub.Spec.Channel != r.params["channel"] {
					t.Errorf("Subscription channel %s, params.env says %s", sub.Spec.Channel, r.params["channel"])
				}
				if og.Namespace != sub.Namespace {
					t.Errorf("OperatorGroup in %s, Subscription in %s: OLM installs only where an OperatorGroup is", og.Namespace, sub.Namespace)
				}
				if len(og.Spec.TargetNamespaces) > 0 || og.Spec.Selector != nil {
					t.Errorf("OperatorGroup targets %v / %v: the documented install mode is AllNamespaces", og.Spec.TargetNamespaces, og.Spec.Selector)
				}
			})
		})
	}
}

// bundleCSV reads the committed bundle's ClusterServiceVersion strictly.
func bundleCSV(t testing.TB, bundleDir string) (*operatorsv1alpha1.ClusterServiceVersion, string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(bundleDir, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("%s/manifests holds %d ClusterServiceVersions, want 1 (make bundle writes it)", bundleDir, len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.UnmarshalStrict(data, csv); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	return csv, files[0]
}

// bundleAnnotations reads bundle/metadata/annotations.yaml.
func bundleAnnotations(t testing.TB, bundleDir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(bundleDir, "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		t.Fatalf("annotations.yaml: %v", err)
	}
	return doc.Annotations
}

// fbcBlob is the part of a file-based catalog blob (olm.package, olm.channel, olm.bundle) these tests read.
type fbcBlob struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	Package        string `json:"package"`
	DefaultChannel string `json:"defaultChannel"`
	Image          string `json:"image"`
	Entries        []struct {
		Name string `json:"name"`
	} `json:"entries"`
	Properties []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"properties"`
	RelatedImages []struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	} `json:"relatedImages"`
	file string
}

// readCatalog reads every blob of a file-based catalog directory (YAML documents or a JSON stream per file).
func readCatalog(t testing.TB, dir string) []fbcBlob {
	t.Helper()
	var blobs []fbcBlob
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var b fbcBlob
			if err := dec.Decode(&b); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if b.Schema != "" {
				b.file = p
				blobs = append(blobs, b)
			}
		}
	})
	if err != nil {
		t.Fatalf("read catalog %s: %v", dir, err)
	}
	if len(blobs) == 0 {
		t.Fatalf("catalog %s holds no file-based catalog blobs (make catalog writes them)", dir)
	}
	return blobs
}

// TestSubscriptionResolves checks, against the committed bundle and catalog, what OLM needs to resolve the
// Subscription in config/openshift/olm: the package and channel exist in the catalog, the channel leads to
// the bundle, and the bundle's CSV supports the OperatorGroup's install mode.
func TestSubscriptionResolves(t *testing.T) {
	root := repoRoot(t)
	r := renderDefault(t)
	m := r.out["olm"]
	if len(m.Subscriptions) != 1 || m.Subscriptions[0].Spec == nil {
		t.Fatal("config/openshift/olm renders no Subscription")
	}
	sub := m.Subscriptions[0]

	bundleDir := filepath.Join(root, "bundle")
	csv, _ := bundleCSV(t, bundleDir)
	ann := bundleAnnotations(t, bundleDir)
	if got := ann["operators.operatorframework.io.bundle.package.v1"]; got != sub.Spec.Package {
		t.Errorf("the bundle is package %q, the Subscription asks for %q", got, sub.Spec.Package)
	}
	if channels := strings.Split(ann["operators.operatorframework.io.bundle.channels.v1"], ","); !slices.Contains(channels, sub.Spec.Channel) {
		t.Errorf("the bundle is in channels %q, the Subscription asks for %q", channels, sub.Spec.Channel)
	}

	// AllNamespaces: the OperatorGroup has no targetNamespaces and no selector (TestReferences checks).
	supported := false
	for _, im := range csv.Spec.InstallModes {
		if im.Type == operatorsv1alpha1.InstallModeTypeAllNamespaces {
			supported = im.Supported
		}
	}
	if !supported {
		t.Errorf("CSV %s does not support the AllNamespaces install mode the OperatorGroup uses", csv.Name)
	}

	blobs := readCatalog(t, filepath.Join(root, "catalog"))
	var pkg, channel, bundle *fbcBlob
	for i := range blobs {
		b := &blobs[i]
		switch {
		case b.Schema == "olm.package" && b.Name == sub.Spec.Package:
			pkg = b
		case b.Schema == "olm.channel" && b.Package == sub.Spec.Package && b.Name == sub.Spec.Channel:
			channel = b
		case b.Schema == "olm.bundle" && b.Package == sub.Spec.Package && b.Name == csv.Name:
			bundle = b
		}
	}
	if pkg == nil {
		t.Fatalf("catalog/ has no olm.package %s", sub.Spec.Package)
	}
	if channel == nil {
		t.Fatalf("catalog/ has no olm.channel %s in package %s", sub.Spec.Channel, sub.Spec.Package)
	}
	if !slices.ContainsFunc(channel.Entries, func(e struct {
		Name string `json:"name"`
	}) bool {
		return e.Name == csv.Name
	}) {
		t.Errorf("channel %s does not list the bundle %s", channel.Name, csv.Name)
	}
	if bundle == nil {
		t.Errorf("catalog/ has no olm.bundle %s", csv.Name)
	}
}
