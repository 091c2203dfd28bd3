package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// samplesDir is where Scenario.Samples are, relative to the repository root.
const samplesDir = "config/samples"

// applied is one object a scenario applied, and where it came from.
type applied struct {
	obj    *unstructured.Unstructured
	source string
}

// objects reads the scenario's samples, then its objects, in the order apply applies them; namespaced
// objects without a namespace are given the demo's.
func (e *Env) objects(s Scenario) ([]applied, error) {
	var todo []applied
	for _, f := range s.Samples {
		path := filepath.Join(e.Root, samplesDir, f)
		objs, err := readObjects(path)
		if err != nil {
			return nil, err
		}
		for _, u := range objs {
			todo = append(todo, applied{obj: u, source: filepath.Join(samplesDir, f)})
		}
	}
	if s.Objects != nil {
		for _, o := range s.Objects(e.Namespace) {
			u, err := toUnstructured(o, e.Client.Scheme())
			if err != nil {
				return nil, err
			}
			todo = append(todo, applied{obj: u, source: "scenario " + s.Name})
		}
	}
	for _, a := range todo {
		u := a.obj
		namespaced, err := e.Client.IsObjectNamespaced(u)
		if err != nil {
			return nil, fmt.Errorf("%s %s in %s: %w", u.GetKind(), u.GetName(), a.source, err)
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace(e.Namespace)
		}
	}
	return todo, nil
}

// apply applies what objects read, in order, with server-side apply under the demo's field owner,
// printing a line for each.
func (e *Env) apply(ctx context.Context, todo []applied) error {
	for _, a := range todo {
		u := a.obj
		if err := e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(e.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s from %s: %w", u.GetKind(), u.GetName(), a.source, err)
		}
		e.Printf("%-38s applied   (%s)", u.GetKind()+" "+objectName(u), a.source)
	}
	return nil
}

// toUnstructured turns a typed object into what server-side apply sends: its JSON form with apiVersion
// and kind, without the fields the server owns.
func toUnstructured(o client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(o, scheme)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	u.SetCreationTimestamp(metav1.Time{})
	u.SetResourceVersion("")
	u.SetManagedFields(nil)
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

// readObjects reads every object of a YAML or JSON file with one or more documents.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(f), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func objectName(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// applyFile applies every object of path, after edit, server-side as the cluster's admin of kubeconfig.
func applyFile(ctx context.Context, kubeconfig, path string, edit func(*unstructured.Unstructured)) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	objs, err := readObjects(path)
	if err != nil {
		return err
	}
	for _, o := range objs {
		edit(o)
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// typed is u as the scheme's typed object of its kind (a SojuBouncer, say).
func typed(u *unstructured.Unstructured, scheme *runtime.Scheme) (client.Object, error) {
	o, err := scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	obj, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", u.GroupVersionKind())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return obj, nil
}
