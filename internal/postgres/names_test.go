package postgres

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	long := strings.Repeat("n", 253)
	tests := []struct {
		namespace, name string
		wantPrefix      string
	}{
		{"homelab", "test2", "homelab_test2_"},
		{"a-b", "c", "a_b_c_"},
		{"a", "b-c", "a_b_c_"},
		{"Team", "app.v2", "team_app_v2_"},
		{"ns", long, "ns_" + strings.Repeat("n", MaxIdentifierLength-hashLength-1-3)},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := Name(tt.namespace, tt.name)
		if !strings.HasPrefix(got, tt.wantPrefix) {
			t.Errorf("Name(%q, %q) = %q, want prefix %q", tt.namespace, tt.name, got, tt.wantPrefix)
		}
		if len(got) > MaxIdentifierLength {
			t.Errorf("Name(%q, %q) has %d bytes, more than %d", tt.namespace, tt.name, len(got), MaxIdentifierLength)
		}
		for _, r := range got {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
				t.Errorf("Name(%q, %q) = %q holds %q", tt.namespace, tt.name, got, r)
			}
		}
		if got != Name(tt.namespace, tt.name) {
			t.Errorf("Name(%q, %q) is not stable", tt.namespace, tt.name)
		}
		key := tt.namespace + "/" + tt.name
		if other, ok := seen[got]; ok {
			t.Errorf("Name(%s) = Name(%s) = %q", key, other, got)
		}
		seen[got] = key
	}
	// Two names that differ only past the cut still differ.
	if Name("ns", long+"a") == Name("ns", long+"b") {
		t.Error("names differing after 63 bytes collide")
	}
}

func TestSecretName(t *testing.T) {
	if got := SecretName("test2"); got != "test2-postgres" {
		t.Errorf("SecretName = %q", got)
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		ref, wantNS, wantName string
		wantErr               bool
	}{
		{ref: "main", wantNS: "apps", wantName: "main"},
		{ref: "db/main", wantNS: "db", wantName: "main"},
		{ref: "/main", wantErr: true},
		{ref: "db/", wantErr: true},
		{ref: "a/b/c", wantErr: true},
	}
	for _, tt := range tests {
		ns, name, err := ParseRef(tt.ref, "apps")
		if (err != nil) != tt.wantErr || ns != tt.wantNS || name != tt.wantName {
			t.Errorf("ParseRef(%q) = %q, %q, %v; want %q, %q, error %v", tt.ref, ns, name, err, tt.wantNS, tt.wantName, tt.wantErr)
		}
	}
}
