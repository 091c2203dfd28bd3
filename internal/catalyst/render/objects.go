package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// MaxObjects is the most objects one deploy may hold (the inventory in status is bounded too).
const MaxObjects = 512

// Parse reads every object of a multi-document YAML stream; empty documents are skipped, a List is
// expanded.
func Parse(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
			continue
		}
		// Unstructured's own decoding keeps integers as int64, as the API machinery expects.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("a document that is not a Kubernetes object: %w", err)
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
			continue
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s without metadata.name", u.GetKind())
		}
		out = append(out, u)
	}
	return out, nil
}

// Label sets labels on every object's metadata (over the repository's own values).
func Label(objs []*unstructured.Unstructured, labels map[string]string) {
	for _, o := range objs {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		o.SetLabels(l)
	}
}

// kindOrder is the order kinds are applied in: what others refer to first.
var kindOrder = []string{
	"ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim", "Role", "RoleBinding", "Service",
	"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Ingress",
}

// Sort orders objects for applying: by kindOrder (other kinds last), then kind, then name.
func Sort(objs []*unstructured.Unstructured) {
	rank := func(k string) int {
		if i := slices.Index(kindOrder, k); i >= 0 {
			return i
		}
		return len(kindOrder)
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		if d := rank(a.GetKind()) - rank(b.GetKind()); d != 0 {
			return d
		}
		if c := strings.Compare(a.GetKind(), b.GetKind()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
}

// Describe names an object as users read it: Kind namespace/name, or Kind name without a namespace.
func Describe(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + " " + ns + "/" + o.GetName()
	}
	return o.GetKind() + " " + o.GetName()
}

// Scope says whether a kind is namespaced; an error for a kind the cluster does not serve.
type Scope func(schema.GroupVersionKind) (namespaced bool, err error)
