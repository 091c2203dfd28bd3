package main

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// relatedImagePrefix names the manager's environment variables that carry the images it deploys, the
// ones OLM lists as relatedImages.
const relatedImagePrefix = "RELATED_IMAGE_"

// disconnectedFalse and disconnectedTrue are the CSV base's disconnected annotation, as the base writes
// it: OpenShift's catalog shows an operator as fit for disconnected clusters only when it is true.
const (
	disconnectedFalse = `features.operators.openshift.io/disconnected: "false"`
	disconnectedTrue  = `features.operators.openshift.io/disconnected: "true"`
)

// digestPattern is what a resolver must return: anything else is refused rather than written into a
// release.
var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Resolver returns the digest ("sha256:<64 hex>") the registry holds for an image reference.
type Resolver func(image string) (string, error)

// File is one file the release rewrites, by its path relative to the repository root.
type File struct {
	Path string
	Data []byte
}

// Inputs are the files a pin reads and rewrites: the manager's Deployment (RELATED_IMAGE_* env), the CSV
// base (the disconnected annotation) and the Go sources holding the same images as defaults.
type Inputs struct {
	Manager File
	CSV     File
	Go      []File
}

// RelatedImages returns the RELATED_IMAGE_* values of the manager Deployment's containers, by variable
// name.
func RelatedImages(manager []byte) (map[string]string, error) {
	type deployment struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Env []struct {
							Name  string `json:"name"`
							Value string `json:"value"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	// manager.yaml holds the Namespace and the Deployment; only documents with containers count.
	out := map[string]string{}
	for _, doc := range bytes.Split(manager, []byte("\n---")) {
		var d deployment
		if err := yaml.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("parse the manager manifest: %w", err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, relatedImagePrefix) {
					out[e.Name] = e.Value
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the manager manifest sets no %s* variable", relatedImagePrefix)
	}
	return out, nil
}

// IsPinned says whether an image names its content by digest.
func IsPinned(image string) bool { return strings.Contains(image, "@sha256:") }

// Pin returns image by digest: its repository without the tag, then @digest. The tag is dropped because
// some mirroring tools refuse references that carry both.
func Pin(image, digest string) (string, error) {
	if !digestPattern.MatchString(digest) {
		return "", fmt.Errorf("%s: the registry returned %q, not a sha256 digest", image, digest)
	}
	repo := image
	if slash, colon := strings.LastIndex(image, "/"), strings.LastIndex(image, ":"); colon > slash {
		repo = image[:colon]
	}
	return repo + "@" + digest, nil
}

// Plan resolves every image that is not pinned yet and returns the replacement of each, old to new.
// Already pinned images are left alone, so a second run changes nothing.
func Plan(images []string, resolve Resolver) (map[string]string, error) {
	pins := map[string]string{}
	for _, image := range images {
		if image == "" || IsPinned(image) {
			continue
		}
		digest, err := resolve(image)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", image, err)
		}
		pinned, err := Pin(image, digest)
		if err != nil {
			return nil, err
		}
		pins[image] = pinned
	}
	return pins, nil
}

// replaceImage replaces every whole occurrence of old in data by pinned: one not preceded or followed by
// a character that can continue an image reference, so ergo:v2.1 never matches inside ergo:v2.10.
func replaceImage(data []byte, old, pinned string) ([]byte, int) {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9._/:@-])` + regexp.QuoteMeta(old) + `($|[^A-Za-z0-9._/:@-])`)
	n := 0
	out := re.ReplaceAllFunc(data, func(m []byte) []byte {
		n++
		return bytes.Replace(m, []byte(old), []byte(pinned), 1)
	})
	return out, n
}

// Rewrite pins every RELATED_IMAGE_* image of in.Manager in the manager and in the Go defaults, and marks
// the CSV base disconnected once every related image and the operator image are pinned. An image of the
// manager that no Go source names is an error: the env and the defaults disagree, and a release must
// not pin one of them only. It returns the files that changed.
func Rewrite(in Inputs, operatorImage string, resolve Resolver) ([]File, error) {
	related, err := RelatedImages(in.Manager.Data)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(related))
	for name := range related {
		names = append(names, name)
	}
	sort.Strings(names)
	images := make([]string, 0, len(names))
	for _, name := range names {
		images = append(images, related[name])
	}
	pins, err := Plan(images, resolve)
	if err != nil {
		return nil, err
	}

	files := append([]File{in.Manager}, in.Go...)
	for _, name := range names {
		old := related[name]
		if IsPinned(old) {
			continue
		}
		inGo := 0
		for i := range files {
			var n int
			files[i].Data, n = replaceImage(files[i].Data, old, pins[old])
			if i > 0 {
				inGo += n
			}
		}
		if inGo == 0 {
			return nil, fmt.Errorf("%s is %s, which no Go default names: make the constant and the manager agree first", name, old)
		}
	}

	csv := in.CSV
	allPinned := operatorImage != "" && IsPinned(operatorImage)
	for _, image := range images {
		allPinned = allPinned && (IsPinned(image) || pins[image] != "")
	}
	if allPinned && !bytes.Contains(csv.Data, []byte(disconnectedTrue)) {
		if !bytes.Contains(csv.Data, []byte(disconnectedFalse)) {
			return nil, fmt.Errorf("%s has no %s annotation to set", csv.Path, disconnectedFalse)
		}
		csv.Data = bytes.Replace(csv.Data, []byte(disconnectedFalse), []byte(disconnectedTrue), 1)
	}
	files = append(files, csv)

	originals := map[string][]byte{in.Manager.Path: in.Manager.Data, in.CSV.Path: in.CSV.Data}
	for _, f := range in.Go {
		originals[f.Path] = f.Data
	}
	var changed []File
	for _, f := range files {
		if !bytes.Equal(f.Data, originals[f.Path]) {
			changed = append(changed, f)
		}
	}
	return changed, nil
}
