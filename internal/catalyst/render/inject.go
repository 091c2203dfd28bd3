package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// podSpecPaths are where each workload kind keeps its pod spec.
var podSpecPaths = map[string][]string{
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
	"Pod":         {"spec"},
}

// InjectEnv gives every container (and init container) running image the env vars: envFrom the
// ConfigMap configMap (the plain values; none when empty) and, for the Secret-valued ones, env entries
// with valueFrom.secretKeyRef, which take precedence over a same-named entry the repository set. It
// returns how many containers it changed.
func InjectEnv(objs []*unstructured.Unstructured, image, configMap string, env []EnvVar) int {
	secrets := envVars(env, true)
	n := 0
	for _, o := range objs {
		path, ok := podSpecPaths[o.GetKind()]
		if !ok {
			continue
		}
		spec, found, err := unstructured.NestedMap(o.Object, path...)
		if err != nil || !found {
			continue
		}
		changed := false
		for _, field := range []string{"initContainers", "containers"} {
			list, _ := spec[field].([]any)
			for _, c := range list {
				cm, ok := c.(map[string]any)
				if !ok || cm["image"] != image {
					continue
				}
				if configMap != "" {
					from, _ := cm["envFrom"].([]any)
					cm["envFrom"] = append(from, map[string]any{"configMapRef": map[string]any{"name": configMap}})
				}
				if len(secrets) > 0 {
					cm["env"] = withEnv(cm["env"], secrets)
				}
				changed = true
				n++
			}
		}
		if changed {
			_ = unstructured.SetNestedMap(o.Object, spec, path...)
		}
	}
	return n
}

// withEnv is the container's env list with add's entries replacing same-named ones.
func withEnv(have any, add []any) []any {
	names := map[string]bool{}
	for _, a := range add {
		names[nameOf(a.(map[string]any))] = true
	}
	var out []any
	list, _ := have.([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok && names[nameOf(m)] {
			continue
		}
		out = append(out, e)
	}
	return append(out, add...)
}

func nameOf(m map[string]any) string {
	n, _ := m["name"].(string)
	return n
}
