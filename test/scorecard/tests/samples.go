package tests

import (
	"context"
	"fmt"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func samplesAdmitted(ctx context.Context, env Env) *result {
	r := newResult(SamplesAdmitted)
	objs, err := samples(env.Bundle)
	if err != nil {
		r.broken("%v", err)
		return r
	}
	if env.Client == nil {
		r.broken("no cluster to create the samples in")
		return r
	}
	if len(objs) == 0 {
		r.fail("alm-examples is empty: the console has no example to start from")
	}
	for i := range objs {
		u := &objs[i]
		id := sampleID(u)
		if !ownedKind(env.Bundle, u.GroupVersionKind()) {
			r.fail("%s: not a kind the ClusterServiceVersion owns", id)
			continue
		}
		admitted, err := dryRunCreate(ctx, env.Client, u, env.Namespace)
		if err != nil {
			r.fail("%s is refused by the API server: %v", id, err)
			continue
		}
		r.logf("%s admitted in namespace %s", id, env.Namespace)
		typed, err := env.Client.Scheme().New(u.GroupVersionKind())
		if err != nil {
			r.fail("%s: the operator's scheme does not know this kind: %v", id, err)
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(admitted.Object, typed, true); err != nil {
			r.fail("%s: the object the API server admitted does not decode into the operator's Go type: %v", id, err)
		}
	}
	return r
}

// dryRunCreate has the API server admit a copy of u in namespace, with strict field validation, and
// returns what it would have stored (defaults applied).
func dryRunCreate(ctx context.Context, c client.Client, u *unstructured.Unstructured, namespace string) (*unstructured.Unstructured, error) {
	obj := u.DeepCopy()
	obj.SetNamespace(namespace)
	if err := c.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
		return nil, err
	}
	return obj, nil
}

func ownedKind(b *apimanifests.Bundle, gvk schema.GroupVersionKind) bool {
	for _, d := range b.CSV.Spec.CustomResourceDefinitions.Owned {
		_, group, _ := strings.Cut(d.Name, ".")
		if d.Kind == gvk.Kind && d.Version == gvk.Version && group == gvk.Group {
			return true
		}
	}
	return false
}

func sampleID(u *unstructured.Unstructured) string {
	return fmt.Sprintf("alm-example %s %q", u.GroupVersionKind().Kind, u.GetName())
}
