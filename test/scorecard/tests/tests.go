package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The tests, by the name a scorecard configuration passes as the entry point's argument.
const (
	// DescriptorsComplete checks that every field of every owned CRD's spec and status, nested fields
	// included, has a descriptor, and that every descriptor names a field. operator-sdk's
	// olm-spec-descriptors only looks at the top-level keys the samples happen to set.
	DescriptorsComplete = "descriptors-complete"
	// SamplesAdmitted creates every alm-example with a server-side dry run and strict field validation,
	// so the API server's schema, defaults and CEL rules of the bundle's CRDs judge it, and decodes the
	// defaulted object strictly into its Go type.
	SamplesAdmitted = "samples-admitted"
	// SampleChildrenAdmitted builds, with the operator's own builders, every child an ErgoNetwork
	// sample would get (ircd.yaml ConfigMap, claim, Deployment, Service, Certificate, Route), checks that
	// ircd.yaml reads back and agrees with the spec and the Deployment's mounts, and has the API server
	// admit each child with a dry run.
	SampleChildrenAdmitted = "sample-children-admitted"
)

// Names lists every test this package provides.
func Names() []string {
	return []string{DescriptorsComplete, SamplesAdmitted, SampleChildrenAdmitted}
}

// NeedsCluster tells whether a test talks to an API server.
func NeedsCluster(name string) bool {
	return name == SamplesAdmitted || name == SampleChildrenAdmitted
}

// Env is what the tests run against: the bundle, and for the tests that need one, a client of a cluster
// that serves the bundle's CRDs, the namespace to dry-run objects in and the ergo image the operator
// deploys.
type Env struct {
	Bundle    *apimanifests.Bundle
	Client    client.Client
	Namespace string
	// ErgoImage is the image children are built with; empty means the CSV's RELATED_IMAGE_ERGO.
	ErgoImage string
}

// Run runs the named test. An unknown name fails and lists the valid ones, as operator-sdk's
// scorecard-test does.
func Run(ctx context.Context, name string, env Env) scapiv1alpha3.TestStatus {
	switch name {
	case DescriptorsComplete:
		return wrap(descriptorsComplete(env.Bundle))
	case SamplesAdmitted:
		return wrap(samplesAdmitted(ctx, env))
	case SampleChildrenAdmitted:
		return wrap(sampleChildrenAdmitted(ctx, env))
	}
	r := newResult(name)
	r.fail("unknown test %q; valid tests: %s", name, strings.Join(Names(), ", "))
	return wrap(r)
}

// result accumulates one TestResult.
type result struct{ scapiv1alpha3.TestResult }

func newResult(name string) *result {
	return &result{scapiv1alpha3.TestResult{
		Name:        name,
		State:       scapiv1alpha3.PassState,
		Errors:      []string{},
		Suggestions: []string{},
	}}
}

func (r *result) fail(format string, args ...any) {
	r.State = scapiv1alpha3.FailState
	r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
}

// broken records that the test could not run at all (no bundle, no cluster), which scorecard reports as
// an error rather than a failure.
func (r *result) broken(format string, args ...any) {
	r.State = scapiv1alpha3.ErrorState
	r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
}

func (r *result) suggest(format string, args ...any) {
	r.Suggestions = append(r.Suggestions, fmt.Sprintf(format, args...))
}

func (r *result) logf(format string, args ...any) {
	r.Log += fmt.Sprintf(format, args...) + "\n"
}

func wrap(r *result) scapiv1alpha3.TestStatus {
	return scapiv1alpha3.TestStatus{Results: []scapiv1alpha3.TestResult{r.TestResult}}
}

// samples are the CSV's alm-examples.
func samples(b *apimanifests.Bundle) ([]unstructured.Unstructured, error) {
	if b == nil || b.CSV == nil {
		return nil, fmt.Errorf("the bundle has no ClusterServiceVersion")
	}
	raw, ok := b.CSV.GetAnnotations()["alm-examples"]
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, fmt.Errorf("the ClusterServiceVersion has no alm-examples annotation")
	}
	var objs []map[string]any
	if err := json.Unmarshal([]byte(raw), &objs); err != nil {
		return nil, fmt.Errorf("alm-examples is not a JSON list of objects: %w", err)
	}
	out := make([]unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, unstructured.Unstructured{Object: o})
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
