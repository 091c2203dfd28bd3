package objectstore

import (
	"errors"
	"testing"
)

func TestScopedKeys(t *testing.T) {
	s, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.Scope("team-a")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		want string // the store key; empty: refused
	}{
		// Positive controls: the shapes the backup layout writes.
		{"PostgresDatabase/app/20261128-1200/data", "team-a/PostgresDatabase/app/20261128-1200/data"},
		{"ErgoNetwork/irc.example/b-1/manifest.json", "team-a/ErgoNetwork/irc.example/b-1/manifest.json"},
		{"a", "team-a/a"},
		// Escapes.
		{"../team-b/PostgresDatabase/app/1/data", ""},
		{"PostgresDatabase/../../team-b/x", ""},
		{"..", ""},
		{".", ""},
		{"./x", ""},
		{"/team-b/x", ""},
		{"x//y", ""},
		{"x/", ""},
		{"", ""},
		{`..\team-b\x`, ""},
		{"%2e%2e/team-b/x", ""},
		{"..%2fteam-b%2fx", ""},
		{"x%00", ""},
		{"x\x00y", ""},
		{"x\ny", ""},
		{"\uff0e\uff0e/team-b", ""}, // fullwidth dots
		{"..\u2215team-b", ""},      // division slash
		{".hidden", ""},             // a leading dot is refused, so no segment is "." or ".."
		{"-x", ""},
		{"x y", ""},
		{"x?y=1", ""},
		{"x#frag", ""},
	}
	for _, tt := range tests {
		got, err := h.key(tt.key)
		if tt.want == "" {
			if err == nil || !errors.Is(err, ErrOutsideScope) {
				t.Errorf("key(%q) = %q, %v; want ErrOutsideScope", tt.key, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("key(%q) = %q, %v; want %q", tt.key, got, err, tt.want)
		}
		if full, err := s.full(got); err != nil || full != "platform/prod/"+tt.want {
			t.Errorf("full(%q) = %q, %v", got, full, err)
		}
	}
}

func TestScopeNamespace(t *testing.T) {
	s, err := New(validConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "..", ".", "a/b", "a%2fb", "../b"} {
		if _, err := s.Scope(ns); err == nil {
			t.Errorf("Scope(%q) succeeded, want an error", ns)
		}
	}
	if _, err := s.Scope("kube-system"); err != nil {
		t.Errorf("control: Scope(kube-system) = %v", err)
	}
}

func FuzzScopedKey(f *testing.F) {
	for _, k := range []string{"a/b", "../x", "%2e%2e", "a/./b", "a\\b"} {
		f.Add(k)
	}
	s, err := New(validConfig())
	if err != nil {
		f.Fatal(err)
	}
	h, err := s.Scope("team-a")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		full, err := h.key(key)
		if err != nil {
			return
		}
		// Whatever passes must stay under the namespace when any reader normalises it as a path.
		for seg := range splitSeq(full) {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("key(%q) = %q passes with segment %q", key, full, seg)
			}
		}
		if full[:len("team-a/")] != "team-a/" {
			t.Fatalf("key(%q) = %q is outside the namespace", key, full)
		}
	})
}

func splitSeq(s string) func(func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i <= len(s); i++ {
			if i == len(s) || s[i] == '/' || s[i] == '\\' || s[i] == '%' {
				if !yield(s[start:i]) {
					return
				}
				start = i + 1
			}
		}
	}
}
