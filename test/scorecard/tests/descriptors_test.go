package tests

import (
	"slices"
	"strings"
	"testing"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldPaths(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	schema := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name":  str,
		"tags":  {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
		"limit": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}},
		"tls": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"issuer": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}},
		}},
		"ports": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"port": {Type: "integer"}},
		}}},
	}}
	want := []string{"limit", "name", "ports", "ports[0].port", "tags", "tls", "tls.issuer", "tls.issuer.name"}
	if got := fieldPaths(&schema, ""); !slices.Equal(got, want) {
		t.Errorf("fieldPaths = %q, want %q", got, want)
	}
}

// bundleWith is a bundle with one owned CRD whose spec has hostname and tls.issuer.name and whose status
// has conditions, described by the given descriptors.
func bundleWith(spec []operatorsv1alpha1.SpecDescriptor, status []operatorsv1alpha1.StatusDescriptor) *apimanifests.Bundle {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1",
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"hostname": str,
						"tls": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"issuer": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}},
						}},
					}},
					"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"conditions": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
							Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"type": str, "status": str},
						}}},
					}},
				},
			}},
		}}},
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	csv.Spec.CustomResourceDefinitions.Owned = []operatorsv1alpha1.CRDDescription{{
		Name: "widgets.example.com", Version: "v1", Kind: "Widget", SpecDescriptors: spec, StatusDescriptors: status,
	}}
	return &apimanifests.Bundle{CSV: csv, V1CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}
}

func specDesc(path string) operatorsv1alpha1.SpecDescriptor {
	return operatorsv1alpha1.SpecDescriptor{Path: path, DisplayName: path, Description: "The " + path + "."}
}

func TestDescriptorsComplete(t *testing.T) {
	conditions := operatorsv1alpha1.StatusDescriptor{
		Path: "conditions", DisplayName: "Conditions", Description: "Conditions.",
		XDescriptors: []string{"urn:alm:descriptor:io.kubernetes.conditions"},
	}
	complete := []operatorsv1alpha1.SpecDescriptor{
		specDesc("hostname"), specDesc("tls"), specDesc("tls.issuer"), specDesc("tls.issuer.name"),
	}
	tests := []struct {
		name   string
		spec   []operatorsv1alpha1.SpecDescriptor
		status []operatorsv1alpha1.StatusDescriptor
		errors []string // substrings, one per expected error
	}{
		{name: "every field described", spec: complete, status: []operatorsv1alpha1.StatusDescriptor{conditions}},
		{
			name:   "nested field missing",
			spec:   complete[:3],
			status: []operatorsv1alpha1.StatusDescriptor{conditions},
			errors: []string{`spec field "tls.issuer.name" has no spec descriptor`},
		},
		{
			name:   "conditions without the conditions x-descriptor need their fields described",
			spec:   complete,
			status: []operatorsv1alpha1.StatusDescriptor{{Path: "conditions", DisplayName: "C", Description: "C."}},
			errors: []string{`status field "conditions[0].status"`, `status field "conditions[0].type"`},
		},
		{
			name:   "descriptor without a field",
			spec:   append(slices.Clone(complete), specDesc("colour")),
			status: []operatorsv1alpha1.StatusDescriptor{conditions},
			errors: []string{`spec descriptor "colour" names no field`},
		},
		{
			name:   "descriptor without a description",
			spec:   append(slices.Clone(complete[1:]), operatorsv1alpha1.SpecDescriptor{Path: "hostname", DisplayName: "Hostname"}),
			status: []operatorsv1alpha1.StatusDescriptor{conditions},
			errors: []string{`"hostname" needs a displayName and a description`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := descriptorsComplete(bundleWith(tt.spec, tt.status))
			wantState := scapiv1alpha3.PassState
			if len(tt.errors) > 0 {
				wantState = scapiv1alpha3.FailState
			}
			if r.State != wantState || len(r.Errors) != len(tt.errors) {
				t.Fatalf("state %s with errors %q, want %s with %d errors", r.State, r.Errors, wantState, len(tt.errors))
			}
			for i, want := range tt.errors {
				if !strings.Contains(r.Errors[i], want) {
					t.Errorf("error %d = %q, want it to contain %q", i, r.Errors[i], want)
				}
			}
		})
	}
}

func TestRunUnknownTest(t *testing.T) {
	st := Run(t.Context(), "no-such-test", Env{})
	if len(st.Results) != 1 || st.Results[0].State != scapiv1alpha3.FailState ||
		!strings.Contains(st.Results[0].Errors[0], DescriptorsComplete) {
		t.Errorf("unknown test: got %+v, want a failure listing the valid tests", st)
	}
}

// A descriptor on a label selector covers matchLabels and matchExpressions (metav1's fields), and only
// when the selector itself has one.
func TestSelectorDescriptorCoversItsFields(t *testing.T) {
	fields := []string{"targetSelector", "targetSelector.matchLabels", "targetSelector.matchExpressions",
		"targetSelector.matchExpressions[0].key"}
	tests := []struct {
		name  string
		descs []descriptor
		fails int
	}{
		{name: "selector described", descs: []descriptor{{path: "targetSelector", displayName: "Target Selector", description: "d"}}},
		{name: "selector not described", fails: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResult(DescriptorsComplete)
			r.checkDescriptors("x.example.com", "spec", fields, tt.descs)
			if got := len(r.Errors); got != tt.fails {
				t.Errorf("%d failures, want %d: %v", got, tt.fails, r.Errors)
			}
		})
	}
}
