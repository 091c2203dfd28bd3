// Command pin-images is the release step that pins every image the operator deploys to its digest: it
// resolves the manager's RELATED_IMAGE_* images and the operator image at their registries, rewrites
// config/manager/manager.yaml and the Go defaults to image@sha256:..., marks the CSV base disconnected,
// and prints the operator image by digest for make bundle's IMG. It needs the registries, so only
// whoever releases runs it (make pin-images); tests run the rewriting (pin.go) with a fake resolver.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
)

// goDefaults are the Go sources whose constants name the same images as the manager's env.
var goDefaults = []string{
	"internal/irc/ergo/names.go",
	"internal/irc/soju/names.go",
	"internal/homelab/authentik/names.go",
	"internal/catalyst/build.go",
}

func main() {
	root := flag.String("root", ".", "repository root")
	operatorImage := flag.String("operator-image", "", "the operator image (make's IMG); pinned and printed, and the CSV is marked disconnected only when it is pinned")
	flag.Parse()
	if err := run(*root, *operatorImage); err != nil {
		fmt.Fprintln(os.Stderr, "pin-images:", err)
		os.Exit(1)
	}
}

func run(root, operatorImage string) error {
	read := func(rel string) (File, error) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		return File{Path: rel, Data: b}, err
	}
	var in Inputs
	var err error
	if in.Manager, err = read("config/manager/manager.yaml"); err != nil {
		return err
	}
	if in.CSV, err = read("config/manifests/bases/platform-operator.clusterserviceversion.yaml"); err != nil {
		return err
	}
	for _, rel := range goDefaults {
		f, err := read(rel)
		if err != nil {
			return err
		}
		in.Go = append(in.Go, f)
	}
	resolve := func(image string) (string, error) {
		return crane.Digest(image, crane.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	if operatorImage != "" {
		pins, err := Plan([]string{operatorImage}, resolve)
		if err != nil {
			return err
		}
		if p, ok := pins[operatorImage]; ok {
			operatorImage = p
		}
	} else {
		fmt.Fprintln(os.Stderr, "pin-images: no -operator-image, so the CSV stays disconnected: false")
	}
	changed, err := Rewrite(in, operatorImage, resolve)
	if err != nil {
		return err
	}
	for _, f := range changed {
		if err := os.WriteFile(filepath.Join(root, f.Path), f.Data, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "pin-images: rewrote", f.Path)
	}
	fmt.Println(operatorImage)
	return nil
}
