package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// The kube-apiserver of this package starts with no CRD: the test installs the CRD of the release before
// the plural changed (testdata), then performs the upgrade docs/iot.md describes ("Upgrading: the plural
// changed"), then checks how kubectl resolves the names.
var cfg *rest.Config

func TestMain(m *testing.M) {
	// Not testenv.Start: it always serves config/crd/bases, whose deployments.iot.nationtech.io is the CRD
	// this test must install itself, after the release's old one, to see its names refused and then taken.
	env := &envtest.Environment{}
	var err error
	if cfg, err = env.Start(); err != nil {
		panic(err)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		panic(err)
	}
	os.Exit(code)
}

var (
	oldGVR = iotv1.GroupVersion.WithResource("iotdeployments")
	newGVR = iotv1.GroupVersion.WithResource("deployments")
)

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// poll waits for cond, failing the test after a minute.
func poll(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func crdCondition(c client.Client, name string, typ apiextensionsv1.CustomResourceDefinitionConditionType) func(context.Context) (*apiextensionsv1.CustomResourceDefinitionCondition, error) {
	return func(ctx context.Context) (*apiextensionsv1.CustomResourceDefinitionCondition, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return nil, err
		}
		for i := range crd.Status.Conditions {
			if crd.Status.Conditions[i].Type == typ {
				return &crd.Status.Conditions[i], nil
			}
		}
		return nil, nil
	}
}

func established(c client.Client, name string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		cond, err := crdCondition(c, name, apiextensionsv1.Established)(ctx)
		return cond != nil && cond.Status == apiextensionsv1.ConditionTrue, client.IgnoreNotFound(err)
	}
}

// sampleObject is an iot Deployment as the release before the plural change stored it, its operator's
// finalizer included.
func sampleObject(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": iotv1.GroupVersion.String(), "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": name, "finalizers": []any{"iot.nationtech.io/desired-state"}},
		"spec": map[string]any{
			"targetSelector": map[string]any{"matchLabels": map[string]any{"site": "lyon"}},
			"score": map[string]any{"type": "PodmanV0", "podmanV0": map[string]any{"services": []any{
				map[string]any{"name": "web", "image": "registry.example/web:1"},
			}}},
		},
	}}
	return u
}

// TestPluralUpgrade performs the upgrade of docs/iot.md against a real API server: the new CRD is refused
// its names while the old one exists (the reason the procedure is needed), and after export, deletion of
// the old CRD and re-creation, the objects are back under the new resource with the same spec. Then a
// RESTMapper built from discovery, as kubectl builds it, resolves deployments.iot.nationtech.io and the
// short name to the iot API, and a bare deployments still to apps/v1.
func TestPluralUpgrade(t *testing.T) {
	ctx := t.Context()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, iotv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	oldCRD := readCRD(t, filepath.Join("testdata", "iotdeployments-crd-before-plural.yaml"))
	newCRD := readCRD(t, filepath.Join("..", "..", "..", "config", "crd", "bases", "iot.nationtech.io_deployments.yaml"))
	if oldCRD.Name != "iotdeployments.iot.nationtech.io" || newCRD.Name != "deployments.iot.nationtech.io" {
		t.Fatalf("CRDs %s and %s, want iotdeployments.iot.nationtech.io and deployments.iot.nationtech.io", oldCRD.Name, newCRD.Name)
	}
	if newCRD.Spec.Names.Singular != "deployment" || !strings.Contains(strings.Join(newCRD.Spec.Names.ShortNames, ","), "iotdeploy") ||
		strings.Join(newCRD.Spec.Names.Categories, ",") != "iot" {
		t.Errorf("new CRD names %+v: want singular deployment, short name iotdeploy, category iot", newCRD.Spec.Names)
	}

	// The cluster as the earlier release left it: its CRD and two Deployments with its finalizer.
	if err := c.Create(ctx, oldCRD.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	poll(t, "old CRD established", established(c, oldCRD.Name))
	var before []*unstructured.Unstructured
	for _, name := range []string{"web", "sensors"} {
		u, err := dyn.Resource(oldGVR).Namespace("default").Create(ctx, sampleObject("default", name), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s under the old CRD: %v", name, err)
		}
		before = append(before, u)
	}

	t.Log("applying the new CRD beside the old one: the API server refuses its names")
	if err := c.Create(ctx, newCRD.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	var refused *apiextensionsv1.CustomResourceDefinitionCondition
	poll(t, "new CRD NamesAccepted=False", func(ctx context.Context) (bool, error) {
		cond, err := crdCondition(c, newCRD.Name, apiextensionsv1.NamesAccepted)(ctx)
		refused = cond
		return cond != nil && cond.Status == apiextensionsv1.ConditionFalse, err
	})
	if !strings.Contains(refused.Message, "Deployment") {
		t.Errorf("NamesAccepted message %q does not name the kind in use", refused.Message)
	}
	if ok, _ := established(c, newCRD.Name)(ctx); ok {
		t.Error("the new CRD is Established beside the old one")
	}
	if err := c.Delete(ctx, newCRD.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	poll(t, "refused CRD gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: newCRD.Name}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})

	t.Log("the documented upgrade: export, remove the finalizers, delete the old CRD, install the new one, re-create")
	list, err := dyn.Resource(oldGVR).Namespace("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(before) {
		t.Fatalf("exported %d objects, want %d", len(list.Items), len(before))
	}
	exported := list.DeepCopy()
	for _, u := range list.Items {
		if _, err := dyn.Resource(oldGVR).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), "application/merge-patch+json",
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, oldCRD.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	poll(t, "old CRD gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: oldCRD.Name}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err := c.Create(ctx, newCRD.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	poll(t, "new CRD established", established(c, newCRD.Name))
	for i := range exported.Items {
		u := &exported.Items[i]
		for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(u.Object, "status")
		// The new operator adds its finalizer again when it reaches NATS.
		unstructured.RemoveNestedField(u.Object, "metadata", "finalizers")
		poll(t, "re-create "+u.GetName(), func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(newGVR).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
			// The new resource may take a moment to be served after Established.
			return err == nil, client.IgnoreNotFound(err)
		})
	}
	for _, b := range before {
		got := &iotv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: b.GetNamespace(), Name: b.GetName()}, got); err != nil {
			t.Fatalf("%s after the upgrade: %v", b.GetName(), err)
		}
		want := &iotv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(b.Object, want); err != nil {
			t.Fatal(err)
		}
		// Fields the old CRD did not have come back with the new CRD's defaults.
		if want.Spec.Rollout.OnFailure == "" {
			want.Spec.Rollout.OnFailure = iotv1.RolloutFailurePause
		}
		if want.Spec.Rollout.RevisionHistoryLimit == 0 {
			want.Spec.Rollout.RevisionHistoryLimit = 10
		}
		if got.Spec.Score.PodmanV0 == nil || got.Spec.Score.PodmanV0.Services[0].Image != want.Spec.Score.PodmanV0.Services[0].Image ||
			got.Spec.TargetSelector.MatchLabels["site"] != want.Spec.TargetSelector.MatchLabels["site"] || got.Spec.Rollout != want.Spec.Rollout {
			t.Errorf("%s after the upgrade: spec %+v, want %+v", b.GetName(), got.Spec, want.Spec)
		}
	}

	t.Log("names as kubectl resolves them")
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), dc, nil)
	resolve := func(arg string) (schema.GroupVersionResource, error) {
		// kubectl get <arg>: a fully qualified resource.version.group, else resource.group, else resource.
		gvr, gr := schema.ParseResourceArg(arg)
		if gvr != nil {
			if _, err := mapper.ResourceFor(*gvr); err == nil {
				return *gvr, nil
			}
		}
		return mapper.ResourceFor(gr.WithVersion(""))
	}
	tests := []struct {
		arg  string
		want schema.GroupVersionResource
	}{
		{"deployments", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{"deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{"deployments.iot.nationtech.io", newGVR},
		{"deployments.v1alpha1.iot.nationtech.io", newGVR},
		{"deployment.iot.nationtech.io", newGVR},
		{"iotdeploy", newGVR},
	}
	for _, tt := range tests {
		got, err := resolve(tt.arg)
		if err != nil || got != tt.want {
			t.Errorf("kubectl get %s resolves to %v (%v), want %v", tt.arg, got, err, tt.want)
		}
	}
	if got, err := resolve("iotdeployments"); !meta.IsNoMatchError(err) {
		t.Errorf("kubectl get iotdeployments resolves to %v (%v): the old plural should be gone", got, err)
	}
}
