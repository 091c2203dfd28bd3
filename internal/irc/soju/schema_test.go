package soju

import (
	"strings"
	"testing"
)

func TestSchemaVersion(t *testing.T) {
	tests := []struct {
		image string
		want  int
		ok    bool
	}{
		{"", 18, true}, // DefaultImage, v0.10.1
		{DefaultImage, 18, true},
		{"codeberg.org/emersion/soju:v0.9.0", 17, true},
		{"registry.local:5000/soju:v0.8.2", 14, true},
		{"codeberg.org/emersion/soju:v0.10.1@sha256:0123", 18, true},
		{"registry.local:5000/soju", 0, false},
		{"codeberg.org/emersion/soju@sha256:0123", 0, false},
		{"codeberg.org/emersion/soju:master", 0, false},
	}
	for _, tt := range tests {
		got, ok := SchemaVersion(tt.image)
		if got != tt.want || ok != tt.ok {
			t.Errorf("SchemaVersion(%q) = %d, %v; want %d, %v", tt.image, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSchemaTooNew(t *testing.T) {
	tests := []struct {
		name     string
		image    string
		found    int
		recorded bool
		refused  bool
	}{
		{"same", DefaultImage, 18, true, false},
		{"older, soju migrates it", DefaultImage, 14, true, false},
		{"newer", DefaultImage, 19, true, true},
		{"newer than an older image", "codeberg.org/emersion/soju:v0.9.0", 18, true, true},
		{"none recorded: soju never ran", DefaultImage, 0, false, false},
		{"unknown image", "example.com/soju:custom", 99, true, false},
	}
	for _, tt := range tests {
		msg := SchemaTooNew(tt.image, tt.found, tt.recorded)
		if (msg != "") != tt.refused {
			t.Errorf("%s: %q", tt.name, msg)
		}
		if tt.refused && (!strings.Contains(msg, "refuses a newer schema") || !strings.Contains(msg, tt.image)) {
			t.Errorf("%s: message %q", tt.name, msg)
		}
	}
}
