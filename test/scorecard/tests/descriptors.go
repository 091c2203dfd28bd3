package tests

import (
	"slices"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// wholeValueDescriptors are x-descriptors whose console widget shows a field's value as a whole, so the
// fields inside it need no descriptors of their own: a condition list is metav1.Condition's, not ours.
var wholeValueDescriptors = []string{"urn:alm:descriptor:io.kubernetes.conditions"}

func descriptorsComplete(b *apimanifests.Bundle) *result {
	r := newResult(DescriptorsComplete)
	if b == nil || b.CSV == nil {
		r.broken("the bundle has no ClusterServiceVersion")
		return r
	}
	owned := b.CSV.Spec.CustomResourceDefinitions.Owned
	if len(owned) == 0 {
		r.fail("the ClusterServiceVersion owns no CRDs")
	}
	for _, desc := range owned {
		schema := ownedSchema(b, desc)
		if schema == nil {
			r.fail("owned CRD %s %s: the bundle has no such CRD version with a schema", desc.Name, desc.Version)
			continue
		}
		spec, status := schema.Properties["spec"], schema.Properties["status"]
		var specDescs, statusDescs []descriptor
		for _, d := range desc.SpecDescriptors {
			specDescs = append(specDescs, descriptor{d.Path, d.DisplayName, d.Description, d.XDescriptors})
		}
		for _, d := range desc.StatusDescriptors {
			statusDescs = append(statusDescs, descriptor{d.Path, d.DisplayName, d.Description, d.XDescriptors})
		}
		r.checkDescriptors(desc.Name, "spec", fieldPaths(&spec, ""), specDescs)
		r.checkDescriptors(desc.Name, "status", fieldPaths(&status, ""), statusDescs)
		r.logf("%s %s: %d spec and %d status descriptors", desc.Name, desc.Version, len(desc.SpecDescriptors),
			len(desc.StatusDescriptors))
	}
	return r
}

// descriptor is what a spec and a status descriptor share.
type descriptor struct {
	path, displayName, description string
	xDescriptors                   []string
}

// checkDescriptors compares the fields of one of a CRD's top-level blocks (spec or status) with the
// descriptors the CSV gives them.
func (r *result) checkDescriptors(crd, block string, fields []string, descs []descriptor) {
	byPath := map[string]descriptor{}
	var whole []string
	for _, d := range descs {
		byPath[d.path] = d
		for _, x := range d.xDescriptors {
			if slices.Contains(wholeValueDescriptors, x) {
				whole = append(whole, d.path)
			}
		}
	}
	// A label selector is metav1.LabelSelector's, not ours: its descriptor covers matchLabels and
	// matchExpressions the way a condition list's covers metav1.Condition's fields.
	for _, f := range fields {
		if _, ok := byPath[f]; ok && slices.Contains(fields, f+".matchLabels") && slices.Contains(fields, f+".matchExpressions") {
			whole = append(whole, f)
		}
	}
	known := map[string]bool{}
	for _, f := range fields {
		known[f] = true
		if _, ok := byPath[f]; ok || insideAny(f, whole) {
			continue
		}
		r.fail("%s: %s field %q has no %s descriptor", crd, block, f, block)
		r.suggest("add a +operator-sdk:csv:customresourcedefinitions:type=%s marker to the Go field of %s.%s and run make bundle",
			block, block, f)
	}
	for _, p := range sortedKeys(byPath) {
		d := byPath[p]
		if !known[p] {
			r.fail("%s: %s descriptor %q names no field of the CRD's %s", crd, block, p, block)
		}
		if strings.TrimSpace(d.displayName) == "" || strings.TrimSpace(d.description) == "" {
			r.fail("%s: %s descriptor %q needs a displayName and a description", crd, block, p)
		}
	}
}

// insideAny tells whether path lies inside one of the parents (a field of it, or of its list items).
func insideAny(path string, parents []string) bool {
	for _, p := range parents {
		if strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[0].") {
			return true
		}
	}
	return false
}

// ownedSchema is the OpenAPI schema of the version of the owned CRD the description is for.
func ownedSchema(b *apimanifests.Bundle, desc operatorsv1alpha1.CRDDescription) *apiextensionsv1.JSONSchemaProps {
	for _, crd := range b.V1CRDs {
		if crd.Name != desc.Name {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == desc.Version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				return v.Schema.OpenAPIV3Schema
			}
		}
	}
	return nil
}

// fieldPaths lists every property under s in descriptor path notation, the one operator-sdk writes from
// the markers: "a.b" for an object's field, "a[0].b" for a field of a list's items. Maps
// (additionalProperties), lists of scalars and quantities are leaves.
func fieldPaths(s *apiextensionsv1.JSONSchemaProps, prefix string) []string {
	var out []string
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		out = append(out, path)
		switch {
		case p.Type == "object" && len(p.Properties) > 0:
			out = append(out, fieldPaths(&p, path)...)
		case p.Type == "array" && p.Items != nil && p.Items.Schema != nil && len(p.Items.Schema.Properties) > 0:
			out = append(out, fieldPaths(p.Items.Schema, path+"[0]")...)
		}
	}
	return out
}
