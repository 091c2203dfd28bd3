package backup

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestValidReason: the program's reason becomes a condition's reason only when the API server takes it.
func TestValidReason(t *testing.T) {
	tests := []struct {
		reason string
		want   bool
	}{
		{"ChecksumMismatch", true},
		{"NoFacts", true},
		{"", false},
		{"has space", false},
		{"9Lives", false},
		{"Trailing:", false},
		{"Ünïcode", false},
		{strings.Repeat("A", 1025), false},
	}
	for _, tt := range tests {
		if got := validReason(tt.reason); got != tt.want {
			t.Errorf("validReason(%q) = %v, want %v", tt.reason, got, tt.want)
		}
	}
}

// TestTruncate: a message fits status.verification.message's 4096 bytes and stays valid UTF-8.
func TestTruncate(t *testing.T) {
	tests := []struct {
		msg   string
		limit int
	}{
		{"short", 4096},
		{strings.Repeat("x", 5000), 4096},
		{strings.Repeat("é", 3000), 4096}, // two bytes each: a cut inside a rune
	}
	for _, tt := range tests {
		got := truncate(tt.msg, tt.limit)
		if len(got) > tt.limit || !utf8.ValidString(got) {
			t.Errorf("truncate(%d bytes) = %d bytes, valid %v", len(tt.msg), len(got), utf8.ValidString(got))
		}
		if len(tt.msg) <= tt.limit && got != tt.msg {
			t.Errorf("truncate changed a message that fits: %q", got)
		}
		if len(tt.msg) > tt.limit && !strings.HasSuffix(got, "...") {
			t.Errorf("a cut message is not marked: %q", got[len(got)-10:])
		}
	}
}
