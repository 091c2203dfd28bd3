package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in      string
		want    []int64
		wantErr bool
	}{
		{in: "64MiB,1GiB", want: []int64{64 << 20, 1 << 30}},
		{in: "10MB, 100MB", want: []int64{10e6, 100e6}},
		{in: "1.5KiB", want: []int64{1536}},
		{in: "512B", want: []int64{512}},
		{in: "", want: nil},
		{in: "64", wantErr: true},
		{in: "-1MiB", wantErr: true},
		{in: "lotsMB", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseSizes(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseSizes(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !slices.Equal(got, tt.want) {
			t.Errorf("parseSizes(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestWithoutScratch(t *testing.T) {
	got := withoutScratch([]string{"p", "backup", "verify", "--id", "x", "--scratch-url-env", "DATABASE_URL", "--result-file", "f"})
	want := []string{"p", "backup", "verify", "--id", "x", "--result-file", "f"}
	if !slices.Equal(got, want) {
		t.Errorf("withoutScratch = %q, want %q", got, want)
	}
}

func TestWriteBetweenMarkers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "performance.md")
	doc := "# title\n\nby hand\n\n" + beginMarker + "\nold figures\n" + endMarker + "\n\nafter\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBetweenMarkers(file, "new figures\n"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "# title\n\nby hand\n\n" + beginMarker + "\nnew figures\n" + endMarker + "\n\nafter\n"
	if string(got) != want {
		t.Errorf("after the write:\n%s\nwant:\n%s", got, want)
	}
	// A file without the markers is refused and left as it was.
	other := filepath.Join(t.TempDir(), "other.md")
	if err := os.WriteFile(other, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBetweenMarkers(other, "x"); !errors.Is(err, errNoMarkers) {
		t.Errorf("writeBetweenMarkers without markers = %v, want errNoMarkers", err)
	}
	if b, _ := os.ReadFile(other); string(b) != "no markers\n" {
		t.Errorf("the file without markers became %q", b)
	}
}
