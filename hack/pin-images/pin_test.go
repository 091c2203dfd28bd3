package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

const (
	ergoDigest   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	kanikoDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	opDigest     = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

// fakeRegistry resolves from a table and fails for anything else, so a test sees every lookup.
func fakeRegistry(t *testing.T, digests map[string]string) Resolver {
	return func(image string) (string, error) {
		d, ok := digests[image]
		if !ok {
			t.Logf("unexpected lookup of %s", image)
			return "", errors.New("not found")
		}
		return d, nil
	}
}

func inputs(t *testing.T) Inputs {
	t.Helper()
	read := func(name string) File {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return File{Path: name, Data: b}
	}
	return Inputs{Manager: read("manager.yaml"), CSV: read("csv.yaml"), Go: []File{read("names.go.txt"), read("build.go.txt")}}
}

func checkGolden(t *testing.T, f File) {
	t.Helper()
	golden := filepath.Join("testdata", f.Path+".golden")
	if *update {
		if err := os.WriteFile(golden, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read %s (go test -update writes it): %v", golden, err)
	}
	if string(f.Data) != string(want) {
		t.Errorf("%s differs from %s:\n%s", f.Path, golden, f.Data)
	}
}

// TestRewrite pins the manager's env and the Go defaults together and marks the CSV disconnected; the
// golden files show the whole output, including the look-alike tag that must stay.
func TestRewrite(t *testing.T) {
	resolve := fakeRegistry(t, map[string]string{
		"ghcr.io/ergochat/ergo:v2.14.0":          ergoDigest,
		"gcr.io/kaniko-project/executor:v1.23.2": kanikoDigest,
	})
	changed, err := Rewrite(inputs(t), "ghcr.io/platform-operator/platform-operator@"+opDigest, resolve)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range changed {
		paths = append(paths, f.Path)
		checkGolden(t, f)
	}
	if got := strings.Join(paths, " "); got != "manager.yaml names.go.txt build.go.txt csv.yaml" {
		t.Errorf("changed %s", got)
	}
	for _, f := range changed {
		if strings.Contains(string(f.Data), "ergo:v2.14.0\"") || strings.Contains(string(f.Data), "value: ghcr.io/ergochat/ergo:v2.14.0") {
			t.Errorf("%s still names the ergo tag", f.Path)
		}
	}

	// A second run finds everything pinned: no lookup (the fake would fail it), no change.
	again := inputs(t)
	for _, f := range changed {
		switch f.Path {
		case "manager.yaml":
			again.Manager = f
		case "csv.yaml":
			again.CSV = f
		case "names.go.txt":
			again.Go[0] = f
		case "build.go.txt":
			again.Go[1] = f
		}
	}
	changed, err = Rewrite(again, "ghcr.io/platform-operator/platform-operator@"+opDigest, fakeRegistry(t, nil))
	if err != nil || len(changed) != 0 {
		t.Errorf("second run: changed %d files, err %v", len(changed), err)
	}
}

// TestRewriteRefuses: whatever cannot be pinned honestly leaves every file as it was.
func TestRewriteRefuses(t *testing.T) {
	good := map[string]string{
		"ghcr.io/ergochat/ergo:v2.14.0":          ergoDigest,
		"gcr.io/kaniko-project/executor:v1.23.2": kanikoDigest,
	}
	tests := []struct {
		name    string
		digests map[string]string
		mutate  func(*Inputs)
		want    string
	}{
		{name: "registry unreachable for one image", digests: map[string]string{"ghcr.io/ergochat/ergo:v2.14.0": ergoDigest},
			want: "resolve gcr.io/kaniko-project/executor:v1.23.2"},
		{name: "registry answers with something else than a digest", want: "not a sha256 digest",
			digests: map[string]string{"ghcr.io/ergochat/ergo:v2.14.0": "sha256:abc", "gcr.io/kaniko-project/executor:v1.23.2": kanikoDigest}},
		{name: "upper-case digest", want: "not a sha256 digest",
			digests: map[string]string{"ghcr.io/ergochat/ergo:v2.14.0": strings.ToUpper(ergoDigest), "gcr.io/kaniko-project/executor:v1.23.2": kanikoDigest}},
		{name: "env and Go default disagree", digests: good, want: "RELATED_IMAGE_ERGO is ghcr.io/ergochat/ergo:v2.14.0, which no Go default names",
			mutate: func(in *Inputs) {
				in.Go[0].Data = []byte(strings.ReplaceAll(string(in.Go[0].Data), `"ghcr.io/ergochat/ergo:v2.14.0"`, `"ghcr.io/ergochat/ergo:v2.15.0"`))
			}},
		{name: "manager without related images", digests: good, want: "sets no RELATED_IMAGE_",
			mutate: func(in *Inputs) { in.Manager.Data = []byte("apiVersion: v1\nkind: Namespace\n") }},
		{name: "CSV without the annotation", digests: good, want: "no features.operators.openshift.io/disconnected",
			mutate: func(in *Inputs) { in.CSV.Data = []byte("kind: ClusterServiceVersion\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs(t)
			if tt.mutate != nil {
				tt.mutate(&in)
			}
			changed, err := Rewrite(in, "ghcr.io/platform-operator/platform-operator@"+opDigest, fakeRegistry(t, tt.digests))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
			if changed != nil {
				t.Errorf("changed %d files on error", len(changed))
			}
		})
	}
}

// TestRewriteDisconnected: the CSV says disconnected only when the operator image is pinned as well.
func TestRewriteDisconnected(t *testing.T) {
	resolve := fakeRegistry(t, map[string]string{
		"ghcr.io/ergochat/ergo:v2.14.0":          ergoDigest,
		"gcr.io/kaniko-project/executor:v1.23.2": kanikoDigest,
	})
	for _, tt := range []struct {
		operator string
		want     bool
	}{
		{"", false},
		{"ghcr.io/platform-operator/platform-operator:v0.1.0", false},
		{"ghcr.io/platform-operator/platform-operator@" + opDigest, true},
	} {
		changed, err := Rewrite(inputs(t), tt.operator, resolve)
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, f := range changed {
			got = got || (f.Path == "csv.yaml" && strings.Contains(string(f.Data), disconnectedTrue))
		}
		if got != tt.want {
			t.Errorf("operator image %q: disconnected %t, want %t", tt.operator, got, tt.want)
		}
	}
}

func TestPin(t *testing.T) {
	tests := []struct {
		image, digest, want, err string
	}{
		{image: "ghcr.io/ergochat/ergo:v2.14.0", digest: ergoDigest, want: "ghcr.io/ergochat/ergo@" + ergoDigest},
		{image: "registry.example.com:5000/ergo:v2", digest: ergoDigest, want: "registry.example.com:5000/ergo@" + ergoDigest},
		{image: "registry.example.com:5000/ergo", digest: ergoDigest, want: "registry.example.com:5000/ergo@" + ergoDigest},
		{image: "ergo:v2", digest: "sha512:" + strings.Repeat("0", 128), err: "not a sha256 digest"},
		{image: "ergo:v2", digest: ergoDigest + "\n", err: "not a sha256 digest"},
	}
	for _, tt := range tests {
		got, err := Pin(tt.image, tt.digest)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Pin(%q, %q) err = %v, want %q", tt.image, tt.digest, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Pin(%q) = %q, %v, want %q", tt.image, got, err, tt.want)
		}
	}
}

func TestReplaceImage(t *testing.T) {
	tests := []struct {
		in, want string
		n        int
	}{
		{in: `x = "a/b:v1"`, want: `x = "a/b@d"`, n: 1},
		{in: "value: a/b:v1\n", want: "value: a/b@d\n", n: 1},
		{in: "a/b:v1", want: "a/b@d", n: 1},
		{in: `"a/b:v10" "x/a/b:v1" "a/b:v1.2" "a/b:v1@sha256:0"`, want: `"a/b:v10" "x/a/b:v1" "a/b:v1.2" "a/b:v1@sha256:0"`},
	}
	for _, tt := range tests {
		got, n := replaceImage([]byte(tt.in), "a/b:v1", "a/b@d")
		if string(got) != tt.want || n != tt.n {
			t.Errorf("replaceImage(%q) = %q, %d, want %q, %d", tt.in, got, n, tt.want, tt.n)
		}
	}
}

// TestRewriteRepository runs the release's rewrite on this repository's own files (read, never written)
// with a registry that knows every image: it fails when the manager's env names an image no Go default
// names, which would make a release pin one and not the other.
func TestRewriteRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	read := func(rel string) File {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return File{Path: rel, Data: b}
	}
	in := Inputs{Manager: read("config/manager/manager.yaml"), CSV: read("config/manifests/bases/platform-operator.clusterserviceversion.yaml")}
	for _, rel := range goDefaults {
		in.Go = append(in.Go, read(rel))
	}
	related, err := RelatedImages(in.Manager.Data)
	if err != nil {
		t.Fatal(err)
	}
	if len(related) < 4 {
		t.Errorf("RELATED_IMAGE_* of the manager: %v, want ergo, soju, authentik and kaniko at least", related)
	}
	anyDigest := func(string) (string, error) { return ergoDigest, nil }
	changed, err := Rewrite(in, "ghcr.io/platform-operator/platform-operator@"+opDigest, anyDigest)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range changed {
		for name, image := range related {
			if !IsPinned(image) && strings.Contains(string(f.Data), image+"\"") {
				t.Errorf("%s still names %s (%s) after the rewrite", f.Path, image, name)
			}
		}
	}
}
