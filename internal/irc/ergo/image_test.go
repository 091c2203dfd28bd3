package ergo

import (
	"strings"
	"testing"
)

func TestImageVersion(t *testing.T) {
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		image, want string
	}{
		{"ghcr.io/ergochat/ergo:v2.14.0", "v2.14.0"},
		{"ghcr.io/ergochat/ergo:v2.19.1", "v2.19.1"},
		{"docker.io/ergochat/ergo:2.15.0", "v2.15.0"},
		{"mirror.example:5000/ergochat/ergo:v2.14.0", "v2.14.0"},
		{"ghcr.io/ergochat/ergo:v2.14.0" + digest, "v2.14.0"},
		// Unknown: rolls as any other image change does.
		{"ghcr.io/ergochat/ergo" + digest, ""},
		{"mirror.example:5000/ergochat/ergo", ""},
		{"ghcr.io/ergochat/ergo", ""},
		{"ghcr.io/ergochat/ergo:stable", ""},
		{"ghcr.io/ergochat/ergo:v2.15.0-rc1", ""},
		{"ghcr.io/ergochat/ergo:v2.20.0", ""},
		{"ghcr.io/ergochat/ergo:v2.14", ""},
		{"registry.example/ergo:test", ""},
		{"", ""},
		{DefaultImage, DefaultImageVersion},
	}
	for _, tt := range tests {
		if got := ImageVersion(tt.image); got != tt.want {
			t.Errorf("ImageVersion(%q) = %q, want %q", tt.image, got, tt.want)
		}
	}
}

// The schemas as ergo's irc/database.go (latestDbSchema) has them at each tag; the two the operator's
// upgrade depends on, pinned here so an edit of the table shows.
func TestDatastoreSchemas(t *testing.T) {
	tests := []struct {
		version string
		want    int
	}{
		{"v2.13.1", 23}, {"v2.14.0", 23},
		{"v2.15.0", 24}, {"v2.16.0", 24}, {"v2.17.0", 24}, {"v2.18.0", 24}, {"v2.19.0", 24}, {"v2.19.1", 24},
		{"v2.11.1", 22}, {"v2.7.0", 20}, {"v2.4.0", 18}, {"v2.0.0", 10},
	}
	for _, tt := range tests {
		if got, ok := datastoreSchemas[tt.version]; !ok || got != tt.want {
			t.Errorf("schema of %s = %d (known %v), want %d", tt.version, got, ok, tt.want)
		}
	}
	last := 0
	for _, v := range []string{"v2.0.0", "v2.1.0", "v2.2.0", "v2.3.0", "v2.4.0", "v2.5.0", "v2.5.1", "v2.6.0",
		"v2.6.1", "v2.7.0", "v2.8.0", "v2.9.0", "v2.9.1", "v2.10.0", "v2.11.0", "v2.11.1", "v2.12.0", "v2.13.0",
		"v2.13.1", "v2.14.0", "v2.15.0", "v2.16.0", "v2.17.0", "v2.18.0", "v2.19.0", "v2.19.1"} {
		s, ok := datastoreSchemas[v]
		if !ok || s < last {
			t.Errorf("%s: schema %d (known %v) after %d: every release is listed, and schemas never go back", v, s, ok, last)
		}
		last = s
	}
}

// The operator's own image must be a release the table knows, or no network would ever be held: bumping
// DefaultImage past the table (or away from DefaultImageVersion) fails here.
func TestDefaultImageVersion(t *testing.T) {
	if _, ok := datastoreSchemas[DefaultImageVersion]; !ok {
		t.Fatalf("DefaultImageVersion %s is not in datastoreSchemas: add its schema from ergo's irc/database.go", DefaultImageVersion)
	}
	if repo, _, pinned := strings.Cut(DefaultImage, "@"); pinned && !strings.Contains(repo[strings.LastIndex(repo, "/")+1:], ":") {
		// Pinned by make pin-images: the digest names no tag to compare with, and ImageVersion falls back
		// to DefaultImageVersion for exactly this string.
		if got := ImageVersion(DefaultImage); got != DefaultImageVersion {
			t.Fatalf("ImageVersion(DefaultImage) = %q, want %q", got, DefaultImageVersion)
		}
		return
	}
	tag := DefaultImage[strings.LastIndex(DefaultImage, ":")+1:]
	if tag != DefaultImageVersion {
		t.Fatalf("DefaultImage %s has tag %s, DefaultImageVersion is %s", DefaultImage, tag, DefaultImageVersion)
	}
}

func TestChooseImage(t *testing.T) {
	const (
		v2140 = "ghcr.io/ergochat/ergo:v2.14.0"
		v2131 = "ghcr.io/ergochat/ergo:v2.13.1"
		v2150 = "ghcr.io/ergochat/ergo:v2.15.0"
		v2191 = "ghcr.io/ergochat/ergo:v2.19.1"
		byDig = "ghcr.io/ergochat/ergo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	tests := []struct {
		name                    string
		running, target         string
		autoUpgrade             bool
		want                    string
		held                    bool
		wantRunning, wantTarget string
	}{
		{name: "schema 23 to 24 without autoUpgrade is held", running: v2140, target: v2191,
			want: v2140, held: true, wantRunning: "v2.14.0", wantTarget: "v2.19.1"},
		{name: "any release of an older schema", running: v2131, target: v2150,
			want: v2131, held: true, wantRunning: "v2.13.1", wantTarget: "v2.15.0"},
		{name: "the default image as target", running: v2140, target: "",
			want: v2140, held: true, wantRunning: "v2.14.0", wantTarget: DefaultImageVersion},
		// The controls: the same input without one of the conditions rolls.
		{name: "autoUpgrade lets it roll", running: v2140, target: v2191, autoUpgrade: true,
			want: v2191, wantRunning: "v2.14.0", wantTarget: "v2.19.1"},
		{name: "same schema rolls", running: v2150, target: v2191,
			want: v2191, wantRunning: "v2.15.0", wantTarget: "v2.19.1"},
		{name: "a new network gets the target", running: "", target: v2191,
			want: v2191, wantTarget: "v2.19.1"},
		{name: "already on the target", running: v2191, target: v2191,
			want: v2191, wantRunning: "v2.19.1", wantTarget: "v2.19.1"},
		{name: "a downgrade is not held (the datastore decides, not the operator)", running: v2191, target: v2140,
			want: v2140, wantRunning: "v2.19.1", wantTarget: "v2.14.0"},
		{name: "a running digest names no version", running: byDig, target: v2191,
			want: v2191, wantTarget: "v2.19.1"},
		{name: "a custom running tag names no version", running: "registry.example/ergo:test", target: v2191,
			want: v2191, wantTarget: "v2.19.1"},
		{name: "a target of unknown version", running: v2140, target: "registry.example/ergo:test",
			want: "registry.example/ergo:test", wantRunning: "v2.14.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChooseImage(tt.running, tt.target, tt.autoUpgrade)
			if got.Image != tt.want || got.Held != tt.held || got.Running != tt.wantRunning || got.Target != tt.wantTarget {
				t.Fatalf("ChooseImage(%q, %q, %v) = %+v, want image %q held %v running %q target %q",
					tt.running, tt.target, tt.autoUpgrade, got, tt.want, tt.held, tt.wantRunning, tt.wantTarget)
			}
			if got.Held && got.RunningSchema >= got.TargetSchema {
				t.Fatalf("held with schemas %d -> %d", got.RunningSchema, got.TargetSchema)
			}
		})
	}
}
