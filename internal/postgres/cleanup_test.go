package postgres

import (
	"testing"
	"time"
)

func TestNextCleanup(t *testing.T) {
	soon := 30 * time.Second
	tests := []struct {
		deleting, timeout time.Duration
		wantRetry         time.Duration
		wantGiveUp        bool
	}{
		{deleting: 0, timeout: DefaultCleanupTimeout, wantRetry: soon},
		{deleting: 9 * time.Minute, timeout: DefaultCleanupTimeout, wantRetry: soon},
		{deleting: 20 * time.Minute, timeout: DefaultCleanupTimeout, wantRetry: 5 * time.Minute},
		{deleting: 28 * time.Minute, timeout: DefaultCleanupTimeout, wantRetry: 2 * time.Minute},
		{deleting: DefaultCleanupTimeout, timeout: DefaultCleanupTimeout, wantGiveUp: true},
		{deleting: 48 * time.Hour, timeout: DefaultCleanupTimeout, wantGiveUp: true},
		// Zero is the default, not "give up at once".
		{deleting: time.Minute, timeout: 0, wantRetry: soon},
		{deleting: 31 * time.Minute, timeout: 0, wantGiveUp: true},
		// A short bound (tests) retries no later than the bound.
		{deleting: 2 * time.Second, timeout: 5 * time.Second, wantRetry: 3 * time.Second},
		{deleting: 5 * time.Second, timeout: 5 * time.Second, wantGiveUp: true},
	}
	for _, tt := range tests {
		retry, giveUp := NextCleanup(tt.deleting, tt.timeout, soon)
		if retry != tt.wantRetry || giveUp != tt.wantGiveUp {
			t.Errorf("NextCleanup(%s, %s) = %s, %v; want %s, %v", tt.deleting, tt.timeout, retry, giveUp, tt.wantRetry, tt.wantGiveUp)
		}
	}
}

func TestNamespaceAllowed(t *testing.T) {
	tests := []struct {
		name, home, ns string
		allowed        []string
		want           bool
	}{
		{"own namespace, empty list", "db", "db", nil, true},
		{"other namespace, empty list", "db", "apps", nil, false},
		{"other namespace, listed", "db", "apps", []string{"web", "apps"}, true},
		{"other namespace, not listed", "db", "apps", []string{"web"}, false},
		{"a prefix is not a match", "db", "apps", []string{"app"}, false},
		{"every namespace", "db", "apps", []string{AllNamespaces}, true},
	}
	for _, tt := range tests {
		if got := NamespaceAllowed(tt.home, tt.ns, tt.allowed); got != tt.want {
			t.Errorf("%s: NamespaceAllowed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParseNamespaces(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "apps", want: []string{"apps"}},
		{in: " apps , web,,apps", want: []string{"apps", "web"}},
		{in: "*", want: []string{"*"}},
		{in: "*,apps", wantErr: true},
		{in: "Apps", wantErr: true},
		{in: "a/b", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseNamespaces(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseNamespaces(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("ParseNamespaces(%q) = %q, want %q", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("ParseNamespaces(%q) = %q, want %q", tt.in, got, tt.want)
			}
		}
	}
}
