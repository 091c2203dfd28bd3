package soju

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/platform-operator/platform-operator/internal/postgres"
)

func TestDriverSSLMode(t *testing.T) {
	const (
		unknown = postgres.TransportUnknown
		plain   = postgres.TransportPlain
		tls     = postgres.TransportTLS
	)
	tests := []struct {
		mode   string
		seen   postgres.Transport
		want   string
		unseen bool // an *SSLModeError asking for a session first
		bad    bool // an *SSLModeError for a mode that has no answer
	}{
		// lib/pq's own modes pass through, whatever was seen, even before any session.
		{mode: "disable", seen: unknown, want: "disable"},
		{mode: "disable", seen: tls, want: "disable"},
		{mode: "require", seen: unknown, want: "require"},
		{mode: "require", seen: tls, want: "require"},
		{mode: "verify-ca", seen: tls, want: "verify-ca"},
		{mode: "verify-ca", seen: unknown, want: "verify-ca"},
		{mode: "verify-full", seen: tls, want: "verify-full"},
		{mode: "verify-full", seen: plain, want: "verify-full"},
		// prefer and allow: what the server answered the operator.
		{mode: "prefer", seen: tls, want: "require"},
		{mode: "prefer", seen: plain, want: "disable"},
		{mode: "allow", seen: tls, want: "require"},
		{mode: "allow", seen: plain, want: "disable"},
		{mode: "", seen: tls, want: "require"},
		{mode: "", seen: plain, want: "disable"},
		// No session yet: no answer, never prefer.
		{mode: "prefer", seen: unknown, unseen: true},
		{mode: "allow", seen: unknown, unseen: true},
		{mode: "", seen: unknown, unseen: true},
		// Not a mode at all (SettingsFromSecret refuses these first).
		{mode: "Prefer", seen: tls, bad: true},
		{mode: "verify_full", seen: tls, bad: true},
		{mode: "require ", seen: tls, bad: true},
	}
	for _, tt := range tests {
		got, err := DriverSSLMode(tt.mode, tt.seen)
		var e *SSLModeError
		switch {
		case tt.unseen || tt.bad:
			if !errors.As(err, &e) || e.Unseen != tt.unseen || e.Mode != tt.mode || got != "" {
				t.Errorf("DriverSSLMode(%q, %q) = %q, %v; want an SSLModeError (unseen %v)", tt.mode, tt.seen, got, err, tt.unseen)
			}
		case err != nil || got != tt.want:
			t.Errorf("DriverSSLMode(%q, %q) = %q, %v; want %q", tt.mode, tt.seen, got, err, tt.want)
		}
		if err == nil && !slices.Contains(DriverSSLModes, got) {
			t.Errorf("DriverSSLMode(%q, %q) = %q, which lib/pq refuses", tt.mode, tt.seen, got)
		}
	}
}

func TestDriverLogin(t *testing.T) {
	in := login
	in.SSLMode = "prefer"
	out, err := DriverLogin(in, postgres.TransportTLS)
	if err != nil {
		t.Fatal(err)
	}
	want := in
	want.SSLMode = "require"
	if out != want {
		t.Errorf("DriverLogin = %+v, want %+v (only the sslmode changes)", out, want)
	}
	if _, err := DriverLogin(in, postgres.TransportUnknown); err == nil {
		t.Error("DriverLogin gave a login for prefer before any session")
	}
}

// TestRenderConfigRefusesDriverlessSSLMode: a login whose sslmode lib/pq refuses renders no config,
// the same login with a mode lib/pq takes renders one.
func TestRenderConfigRefusesDriverlessSSLMode(t *testing.T) {
	for _, mode := range []string{"prefer", "allow", ""} {
		bad := login
		bad.SSLMode = mode
		if out, err := RenderConfig(full(), bad); err == nil {
			t.Errorf("sslmode %q rendered:\n%s", mode, out)
		}
	}
	for _, mode := range DriverSSLModes {
		ok := login
		ok.SSLMode = mode
		out, err := RenderConfig(full(), ok)
		if err != nil {
			t.Errorf("sslmode %q: %v", mode, err)
		}
		if !strings.Contains(string(out), "sslmode='"+mode+"'") {
			t.Errorf("sslmode %q not in the config:\n%s", mode, out)
		}
	}
}
