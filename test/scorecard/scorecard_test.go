package scorecard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// upstreamImage is the repository of operator-sdk's scorecard-test image; its tag is the operator-sdk
// version whose images/scorecard-test entry point `make scorecard-test` builds into bin/.
const (
	upstreamImage = "quay.io/operator-framework/scorecard-test"
	customImage   = "ghcr.io/platform-operator/platform-operator-scorecard"
	customCommand = "./test/scorecard/cmd/platform-operator-scorecard"
)

// repoRoot is the root module's directory.
func repoRoot(t testing.TB) string { return testutil.RepoRoot(t) }

// The API server, the custom entry point and the runner are set up once, on first use, for every test of
// the package; TestMain stops the API server.
var (
	setupOnce sync.Once
	runner    Runner
	apiEnv    *envtest.Environment
	setupErr  error
)

func TestMain(m *testing.M) {
	testutil.RunThenStop(m, &apiEnv)
}

// localRunner is a Runner for the committed bundle's configuration: operator-sdk's scorecard-test built
// into bin/ (SCORECARD_TEST overrides it), our entry point built here with the flags of the image, and a
// kube-apiserver (envtest, KUBEBUILDER_ASSETS) that serves the bundle's CRDs and the cert-manager and
// Route CRDs, standing in for the cluster a scorecard pod would run in.
func localRunner(t *testing.T) Runner {
	t.Helper()
	if err := Supported(); err != nil {
		t.Skip(err)
	}
	setupOnce.Do(func() { runner, setupErr = setup(repoRoot(t)) })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return runner
}

func setup(root string) (Runner, error) {
	cfg, err := Configuration(filepath.Join(root, "bundle"))
	if err != nil {
		return Runner{}, err
	}
	images := map[string]string{}
	tmp, err := os.MkdirTemp("", "scorecard-bin-")
	if err != nil {
		return Runner{}, err
	}
	custom := filepath.Join(tmp, "platform-operator-scorecard")
	// The image's build (test/scorecard/Dockerfile): static, so it runs in a root that holds nothing else.
	build := exec.Command("go", "build", "-trimpath", "-o", custom, customCommand)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return Runner{}, fmt.Errorf("build %s: %v\n%s", customCommand, err, out)
	}
	for _, stage := range cfg.Stages {
		for _, test := range stage.Tests {
			repo, tag, _ := strings.Cut(test.Image, ":")
			switch repo {
			case upstreamImage:
				exe := os.Getenv("SCORECARD_TEST")
				if exe == "" {
					exe = filepath.Join(root, "bin", "scorecard-test-"+tag)
				}
				if _, err := os.Stat(exe); err != nil {
					return Runner{}, fmt.Errorf("operator-sdk's scorecard-test entry point %s: %w (`make scorecard-test` builds it)", tag, err)
				}
				images[test.Image] = exe
			case customImage:
				images[test.Image] = custom
			}
		}
	}

	// Not testenv.Start, which serves config/crd/bases: the scorecard checks the bundle, so the API server
	// serves the CRDs as the bundle ships them to OLM.
	apiEnv = &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "bundle", "manifests"),
			filepath.Join(root, "config", "crd", "external"),
		},
		ErrorIfCRDPathMissing: true,
	}
	if _, err := apiEnv.Start(); err != nil {
		return Runner{}, fmt.Errorf("start kube-apiserver and etcd (run through `make test`, which sets KUBEBUILDER_ASSETS): %w", err)
	}
	if !slices.ContainsFunc(apiEnv.CRDs, func(c *apiextensionsv1.CustomResourceDefinition) bool {
		return c.Spec.Group == "irc.josie.cloud"
	}) {
		return Runner{}, errors.New("the bundle's manifests hold no irc.josie.cloud CRD")
	}
	user, err := apiEnv.AddUser(envtest.User{Name: "scorecard", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return Runner{}, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return Runner{}, err
	}
	return Runner{
		Images: images,
		Env:    []string{"SCORECARD_NAMESPACE=default", "KUBECONFIG=/kubeconfig"},
		Files:  map[string][]byte{"kubeconfig": kubeconfig},
	}, nil
}

func run(t *testing.T, bundleDir string) []Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	results, err := localRunner(t).Run(ctx, bundleDir)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// TestBundleScorecard runs the committed bundle's scorecard configuration: operator-sdk's basic and olm
// suites and our own tests all pass.
func TestBundleScorecard(t *testing.T) {
	results := run(t, filepath.Join(repoRoot(t), "bundle"))
	suites := map[string]int{}
	for _, r := range results {
		suites[r.Test.Labels["suite"]]++
		if !r.Passed() {
			t.Errorf("scorecard test failed: %s", r)
			continue
		}
		t.Logf("passed: %s", r)
	}
	// The configuration cannot quietly lose a suite: every one of them ran.
	for suite, want := range map[string]int{"basic": 1, "olm": 5, "platform-operator": 3} {
		if suites[suite] != want {
			t.Errorf("suite %s ran %d tests, want %d", suite, suites[suite], want)
		}
	}
}

// TestScorecardFailsBrokenBundles runs the same configuration against copies of the bundle with one
// thing broken, and checks that the run fails, in the tests that should catch it.
func TestScorecardFailsBrokenBundles(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(csv map[string]any)
		// crd, when set, edits the bundle's CRD too.
		crd func(crd map[string]any)
		// failing are the tests that must fail; every other test must still pass, so a failure is
		// attributed to the right check.
		failing []string
	}{
		{
			name:    "top-level spec field without a descriptor",
			mutate:  func(csv map[string]any) { dropDescriptor(t, csv, "specDescriptors", "route") },
			failing: []string{"olm-spec-descriptors-test", "descriptors-complete-test"},
		},
		{
			// operator-sdk's olm-spec-descriptors looks only at the samples' top-level keys.
			name:    "nested spec field without a descriptor",
			mutate:  func(csv map[string]any) { dropDescriptor(t, csv, "specDescriptors", "tls.issuerRef.name") },
			failing: []string{"descriptors-complete-test"},
		},
		{
			name:    "status field without a descriptor",
			mutate:  func(csv map[string]any) { dropDescriptor(t, csv, "statusDescriptors", "ports[0].port") },
			failing: []string{"descriptors-complete-test"},
		},
		{
			name: "descriptor for a field the CRD does not have",
			mutate: func(csv map[string]any) {
				d := descriptors(t, csv, "specDescriptors")
				d = append(d, map[string]any{"path": "colour", "displayName": "Colour", "description": "Not a field."})
				setDescriptors(t, csv, "specDescriptors", d)
			},
			failing: []string{"descriptors-complete-test"},
		},
		{
			name:    "sample the API server refuses (hostname without a dot)",
			mutate:  func(csv map[string]any) { editSample(t, csv, "hostname", "localhost") },
			failing: []string{"samples-admitted-test", "sample-children-admitted-test"},
		},
		{
			// The CRD refuses overcommitted hugepages itself; a bundle whose CRD lacks that rule admits
			// the sample, and only the children test sees the API server refuse its Deployment.
			name: "sample whose Deployment the API server refuses (hugepages without limits, a CRD without the rule)",
			mutate: func(csv map[string]any) {
				editSample(t, csv, "resources", map[string]any{"requests": map[string]any{"hugepages-2Mi": "2Mi"}})
			},
			crd:     dropResourcesRules,
			failing: []string{"sample-children-admitted-test"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyBundle(t)
			editCSV(t, dir, tt.mutate)
			if tt.crd != nil {
				editYAML(t, filepath.Join(dir, "manifests", crdFile), tt.crd)
				loosenServedCRD(t, tt.crd)
			}
			results := run(t, dir)
			var failed []string
			for _, r := range results {
				if !r.Passed() {
					failed = append(failed, r.Name())
					t.Logf("failed as it should: %s", r)
				}
			}
			slices.Sort(failed)
			want := slices.Clone(tt.failing)
			slices.Sort(want)
			if !slices.Equal(failed, want) {
				t.Errorf("failing tests %q, want %q", failed, want)
			}
		})
	}
}

func copyBundle(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := copyTree(filepath.Join(repoRoot(t), "bundle"), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	csvFile = "platform-operator.clusterserviceversion.yaml"
	crdFile = "irc.josie.cloud_ergonetworks.yaml"
)

func editCSV(t *testing.T, bundleDir string, edit func(map[string]any)) {
	t.Helper()
	editYAML(t, filepath.Join(bundleDir, "manifests", csvFile), edit)
}

// loosenServedCRD edits the ErgoNetwork CRD the test API server serves (installed once from the
// repository's bundle) for the rest of the test, and puts it back afterwards. It waits until a spec only
// the edited rules refused is admitted.
func loosenServedCRD(t *testing.T, edit func(map[string]any)) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(apiEnv.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := c.Get(ctx, client.ObjectKey{Name: "ergonetworks.irc.josie.cloud"}, crd); err != nil {
		t.Fatal(err)
	}
	served := crd.Object["spec"]
	edit(crd.Object)
	if err := c.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKey{Name: crd.GetName()}, crd); err != nil {
				return err
			}
			crd.Object["spec"] = served
			return c.Update(ctx, crd)
		})
		if err != nil {
			t.Errorf("restore the served CRD: %v", err)
		}
	})
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "irc.josie.cloud/v1alpha1", "kind": "ErgoNetwork",
		"metadata": map[string]any{"name": "probe", "namespace": "default"},
		"spec": map[string]any{"hostname": "probe.irc.test", "listeners": []any{map[string]any{"address": ":6667"}},
			"resources": map[string]any{"requests": map[string]any{"hugepages-2Mi": "2Mi"}}},
	}}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return c.Create(ctx, probe.DeepCopy(), client.DryRunAll) == nil, nil
	})
	if err != nil {
		t.Fatalf("the API server still refuses what the edited CRD admits: %v", err)
	}
}

// dropResourcesRules removes the CEL rules of spec.resources from the bundle's CRD.
func dropResourcesRules(crd map[string]any) {
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		schema := v.(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		spec := schema["properties"].(map[string]any)["spec"].(map[string]any)
		delete(spec["properties"].(map[string]any)["resources"].(map[string]any), "x-kubernetes-validations")
	}
}

func editYAML(t *testing.T, p string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if data, err = yaml.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ownedCRD is the ErgoNetwork entry of the CSV's owned CRDs, the one the broken-bundle cases edit.
func ownedCRD(t *testing.T, csv map[string]any) map[string]any {
	t.Helper()
	spec, _ := csv["spec"].(map[string]any)
	crds, _ := spec["customresourcedefinitions"].(map[string]any)
	owned, _ := crds["owned"].([]any)
	for _, o := range owned {
		if crd, _ := o.(map[string]any); crd["name"] == "ergonetworks.irc.josie.cloud" {
			return crd
		}
	}
	t.Fatalf("the CSV's %d owned CRDs do not include ergonetworks.irc.josie.cloud", len(owned))
	return nil
}

func descriptors(t *testing.T, csv map[string]any, list string) []any {
	t.Helper()
	d, _ := ownedCRD(t, csv)[list].([]any)
	return d
}

func setDescriptors(t *testing.T, csv map[string]any, list string, d []any) {
	t.Helper()
	ownedCRD(t, csv)[list] = d
}

func dropDescriptor(t *testing.T, csv map[string]any, list, path string) {
	t.Helper()
	d := descriptors(t, csv, list)
	kept := slices.DeleteFunc(slices.Clone(d), func(x any) bool { return x.(map[string]any)["path"] == path })
	if len(kept) != len(d)-1 {
		t.Fatalf("%s has no descriptor %q to drop", list, path)
	}
	setDescriptors(t, csv, list, kept)
}

// editSample sets a spec field of the ErgoNetwork alm-example.
func editSample(t *testing.T, csv map[string]any, field string, value any) {
	t.Helper()
	meta := csv["metadata"].(map[string]any)
	annotations := meta["annotations"].(map[string]any)
	var samples []map[string]any
	if err := yaml.Unmarshal([]byte(annotations["alm-examples"].(string)), &samples); err != nil {
		t.Fatalf("alm-examples: %v", err)
	}
	i := slices.IndexFunc(samples, func(s map[string]any) bool { return s["kind"] == "ErgoNetwork" })
	if i < 0 {
		t.Fatalf("alm-examples has no ErgoNetwork among %d samples", len(samples))
	}
	samples[i]["spec"].(map[string]any)[field] = value
	data, err := yaml.YAMLToJSON(mustYAML(t, samples))
	if err != nil {
		t.Fatal(err)
	}
	annotations["alm-examples"] = string(data)
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
