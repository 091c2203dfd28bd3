package render

import (
	"maps"
)

// Keys of the Helm values the operator sets (over the Project's deployment.values, which keep every
// other key):
//
//	image.repository, image.tag, image.digest   the environment's image
//	ingress.host                                 the environment's host, <namespace>.<domain>
//	env                                          the env vars, as a list of Kubernetes EnvVars
//	                                             ({name, value} or {name, valueFrom.secretKeyRef})
const (
	ValuesImage   = "image"
	ValuesIngress = "ingress"
	ValuesEnv     = "env"
)

// ImagePlaceholder is the image name a manifest or kustomization may use for the environment's image:
// containers whose image is it (or the Project's image repository) get the environment's image.
const ImagePlaceholder = "catalyst-image"

// EnvConfigMap is the name (before kustomize's hash suffix) of the ConfigMap generated with the plain
// env vars, for types manifest and kustomize.
const EnvConfigMap = "catalyst-env"

// Input is what a deploy is rendered from, besides the checkout.
type Input struct {
	// Path is the chart, manifest directory or kustomization, relative to the checkout.
	Path string
	// Namespace is the environment's namespace.
	Namespace string
	// Release is the Helm release name (type helm).
	Release string
	// Image is the environment's image.
	Image Image
	// Host is the environment's host name.
	Host string
	// Env are the environment's variables.
	Env []EnvVar
	// Values are the Project's deployment.values (type helm).
	Values map[string]any
	// Labels go on every object rendered.
	Labels map[string]string
	// AllowRemoteBases lets a kustomization (type kustomize) name remote bases and files in resources,
	// bases and components, which kustomize fetches with git or HTTP during the build (the operator's
	// --catalyst-allow-remote-bases). Omitted from JSON when false, so that deploy digests made before
	// it existed stay the same, and turning it on tries a refused commit again.
	AllowRemoteBases bool `json:",omitempty"`
}

// Image is an image in a registry.
type Image struct {
	// Repository is <registry>/<repository>, without tag.
	Repository string
	// Tag is the tag (the commit id).
	Tag string
	// Digest is the manifest digest (sha256:...), when known.
	Digest string
}

// Ref is the image's reference: by digest when known (it never moves), else by tag.
func (i Image) Ref() string {
	if i.Digest != "" {
		return i.Repository + "@" + i.Digest
	}
	return i.Repository + ":" + i.Tag
}

// EnvVar is one env var: a value, or a key of a Secret in the environment's namespace.
type EnvVar struct {
	Name, Value string
	// Secret and Key name the Secret's key when Secret is set; Value is then unused.
	Secret, Key string
}

// envVars is env as Kubernetes EnvVars.
func envVars(env []EnvVar, secretsOnly bool) []any {
	out := []any{}
	for _, e := range env {
		switch {
		case e.Secret != "":
			out = append(out, map[string]any{"name": e.Name, "valueFrom": map[string]any{
				"secretKeyRef": map[string]any{"name": e.Secret, "key": e.Key}}})
		case !secretsOnly:
			out = append(out, map[string]any{"name": e.Name, "value": e.Value})
		}
	}
	return out
}

// HelmValues is the chart's values: the Project's values with the operator's keys set over them. Maps
// merge key by key (the Project's image.pullPolicy stays); any other value the operator sets replaces
// the Project's whole (env is the operator's list). Secret-valued env vars appear only as references.
func HelmValues(in Input) map[string]any {
	image := map[string]any{"repository": in.Image.Repository, "tag": in.Image.Tag}
	if in.Image.Digest != "" {
		image["digest"] = in.Image.Digest
	}
	ours := map[string]any{
		ValuesImage:   image,
		ValuesIngress: map[string]any{"host": in.Host},
		ValuesEnv:     envVars(in.Env, false),
	}
	return merge(copyMap(in.Values), ours)
}

// merge sets over's keys into base, merging maps recursively, and returns base.
func merge(base, over map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = merge(bm, vm)
				continue
			}
			base[k] = merge(map[string]any{}, vm)
			continue
		}
		base[k] = v
	}
	return base
}

// copyMap is a deep copy of a JSON map.
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
