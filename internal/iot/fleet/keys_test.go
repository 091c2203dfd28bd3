package fleet

import "testing"

func TestKeys(t *testing.T) {
	d := DeploymentKey{Namespace: "shop", Name: "web"}
	if got := DesiredKey("dev-1", d); got != "dev-1.shop.web" {
		t.Errorf("DesiredKey = %q", got)
	}
	if got := StateKey(d, "dev-1"); got != "shop.web.dev-1" {
		t.Errorf("StateKey = %q", got)
	}
	dev, dd, err := ParseDesiredKey(DesiredKey("dev-1", d))
	if err != nil || dev != "dev-1" || dd != d {
		t.Errorf("ParseDesiredKey round trip = %q %v %v", dev, dd, err)
	}
	dd, dev, err = ParseStateKey(StateKey(d, "dev-1"))
	if err != nil || dev != "dev-1" || dd != d {
		t.Errorf("ParseStateKey round trip = %q %v %v", dev, dd, err)
	}
}

func TestParseKeysRefuse(t *testing.T) {
	for _, key := range []string{"", "a.b", "a.b.c.d", "a..c", "a.*.c", "a.>.c", "a.b c.d"} {
		if _, _, err := ParseDesiredKey(key); err == nil {
			t.Errorf("ParseDesiredKey(%q) accepted", key)
		}
		if _, _, err := ParseStateKey(key); err == nil {
			t.Errorf("ParseStateKey(%q) accepted", key)
		}
	}
}

func TestValidDeviceID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"rpi-0042", true},
		{"AB_12", true},
		{"", false},
		{"a.b", false},
		{"a*", false},
		{"a>", false},
		{"a b", false},
		{string(make([]byte, 129)), false},
	}
	for _, tt := range tests {
		if err := ValidDeviceID(tt.id); (err == nil) != tt.ok {
			t.Errorf("ValidDeviceID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
		}
	}
}
