package openshift

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/operator-framework/api/crds"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/platform-operator/platform-operator/internal/testutil"
	"github.com/platform-operator/platform-operator/internal/testutil/testenv"
)

// The API server is started once, on first use, and stopped after the package's tests: only the tests that
// create objects pay for it.
var (
	apiOnce sync.Once
	apiEnv  *testenv.Env
	apiErr  error
)

func TestMain(m *testing.M) {
	testutil.RunThenStop(m, &apiEnv)
}

// apiServer is a kube-apiserver (testenv, KUBEBUILDER_ASSETS as `make test` sets it) serving OLM's CRDs from
// operator-framework/api, the repository's CRDs and the external ones (cert-manager, Routes) the operator uses.
func apiServer(t testing.TB) client.Client {
	t.Helper()
	apiOnce.Do(func() {
		apiEnv, apiErr = testenv.Start(testenv.Options{External: true,
			CRDs: []*apiextensionsv1.CustomResourceDefinition{crds.CatalogSource(), crds.Subscription(), crds.OperatorGroup()}})
	})
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	return apiEnv.Client
}

// createStrictly creates every document of a YAML stream in namespace (created when missing) with strict
// field validation, so an unknown or duplicate field is refused the way `oc apply` would warn or refuse.
func createStrictly(t testing.TB, c client.Client, namespace string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	docs, err := splitDocuments(data)
	if err != nil {
		t.Fatal(err)
	}
	var created []*unstructured.Unstructured
	for _, doc := range docs {
		u, err := createDocument(c, namespace, doc)
		if err != nil {
			t.Error(err)
			continue
		}
		created = append(created, u)
	}
	return created
}

// createDocument creates one YAML document in namespace (created when missing) with strict field validation.
func createDocument(c client.Client, namespace string, doc []byte) (*unstructured.Unstructured, error) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !isAlreadyExists(err) {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		return nil, err
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(namespace)
	}
	if err := c.Create(ctx, u, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		return nil, fmt.Errorf("create %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return u, nil
}

func isAlreadyExists(err error) bool {
	return client.IgnoreAlreadyExists(err) == nil
}

// TestOLMObjectsAreAccepted creates config/openshift/olm's objects, as rendered for the default project and
// another, on an API server serving OLM's own CRDs: their schemas and validation rules accept them.
// (BuildConfigs and ImageStreams are served by openshift-apiserver, which cannot run here: TestKustomizationsRender
// applies its validation rules instead.)
func TestOLMObjectsAreAccepted(t *testing.T) {
	c := apiServer(t)
	for _, r := range []rendering{renderDefault(t), renderFor(t, otherNamespace)} {
		t.Run(r.namespace, func(t *testing.T) {
			created := createStrictly(t, c, r.namespace, r.raw["olm"])
			if len(created) != 3 {
				t.Errorf("created %d objects, want the OperatorGroup, CatalogSource and Subscription", len(created))
			}
		})
	}

	// The same path refuses what the CRDs do not allow, so the acceptance above means something.
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nmetadata: {name: unknown-field}\n" +
			"spec: {sourceType: grpc, image: x, pollInterval: 10m}\n",
		"invalid enum": "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nmetadata: {name: bad-enum}\n" +
			"spec: {sourceType: grpc, image: x, grpcPodConfig: {securityContextConfig: strict}}\n",
	} {
		if _, err := createDocument(c, "refusals", []byte(doc)); err == nil {
			t.Errorf("%s: the API server accepted %s", name, doc)
		}
	}
}
