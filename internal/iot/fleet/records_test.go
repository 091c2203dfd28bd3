package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func reasonOf(err error) string {
	var re *RecordError
	if errors.As(err, &re) {
		return re.Reason
	}
	if err != nil {
		return "untyped: " + err.Error()
	}
	return ""
}

func TestDecodeStateBounds(t *testing.T) {
	at := time.Unix(1, 0).UTC()
	good := State{Version: ContractVersion, Generation: 2, Phase: PhaseRunning, PrevGeneration: 1, PrevPhase: PhasePending, At: at}
	tests := []struct {
		name   string
		edit   func(*State)
		raw    []byte // instead of the edited record
		reason string
	}{
		{name: "a valid record (positive control)", edit: func(*State) {}},
		{name: "a first record", edit: func(s *State) { s.PrevGeneration, s.PrevPhase = 0, PhaseNone }},
		{name: "generation 2^53", edit: func(s *State) { s.Generation = MaxGeneration }},
		{name: "generation 0", edit: func(s *State) { s.Generation = 0 }, reason: ReasonField},
		{name: "a negative generation", edit: func(s *State) { s.Generation = -1 }, reason: ReasonField},
		{name: "generation beyond 2^53", edit: func(s *State) { s.Generation = MaxGeneration + 1 }, reason: ReasonField},
		{name: "a previous phase without a previous generation", edit: func(s *State) { s.PrevGeneration = 0 }, reason: ReasonField},
		{name: "a previous generation without a previous phase", edit: func(s *State) { s.PrevPhase = PhaseNone }, reason: ReasonField},
		{name: "an unknown phase", edit: func(s *State) { s.Phase = "Exploded" }, reason: ReasonField},
		{name: "no phase", edit: func(s *State) { s.Phase = PhaseNone }, reason: ReasonField},
		{name: "another contract version", edit: func(s *State) { s.Version = ContractVersion + 1 }, reason: ReasonVersion},
		{name: "another version whose fields do not fit", raw: fmt.Appendf(nil, `{"v":%d,"generation":"two"}`, ContractVersion+1), reason: ReasonVersion},
		{name: "not JSON", raw: []byte("\x00\xffjunk"), reason: ReasonDecode},
		{name: "a field of the wrong type", raw: fmt.Appendf(nil, `{"v":%d,"generation":"two","phase":"Running"}`, ContractVersion), reason: ReasonDecode},
		{name: "oversize", edit: func(s *State) { s.Message = strings.Repeat("x", MaxStateRecordBytes) }, reason: ReasonOversize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.raw
			if data == nil {
				s := good
				tt.edit(&s)
				data = Encode(s)
			}
			s, err := DecodeState(data)
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("DecodeState: reason %q (%v), want %q", got, err, tt.reason)
			}
			if err == nil && s == nil {
				t.Fatal("no record and no error")
			}
		})
	}
}

func TestDecodeDeviceBounds(t *testing.T) {
	good := DeviceInfo{Version: ContractVersion, ID: "dev-1", Labels: map[string]string{"zone": "a", "example.com/rack": "r-1", "empty": ""},
		Inventory: Inventory{Hostname: "pi", Arch: "arm64", CPUs: 4}, Previous: &DeviceLabels{Labels: map[string]string{"zone": "b"}}}
	labels := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprint("l", i)] = "v"
		}
		return m
	}
	tests := []struct {
		name   string
		key    string
		edit   func(*DeviceInfo)
		reason string
	}{
		{name: "a valid record (positive control)", edit: func(*DeviceInfo) {}},
		{name: "a tombstone", edit: func(d *DeviceInfo) { d.Labels, d.Removed = nil, true }},
		{name: "64 labels", edit: func(d *DeviceInfo) { d.Labels = labels(MaxLabels) }},
		{name: "a record under another device's key", key: "dev-2", edit: func(*DeviceInfo) {}, reason: ReasonForeign},
		{name: "an ID that is not a token", key: "dev.1", edit: func(d *DeviceInfo) { d.ID = "dev.1" }, reason: ReasonField},
		{name: "too many labels", edit: func(d *DeviceInfo) { d.Labels = labels(MaxLabels + 1) }, reason: ReasonField},
		{name: "a label key with a space", edit: func(d *DeviceInfo) { d.Labels = map[string]string{"a b": "c"} }, reason: ReasonField},
		{name: "a label value of 64 characters", edit: func(d *DeviceInfo) { d.Labels = map[string]string{"a": strings.Repeat("v", 64)} }, reason: ReasonField},
		{name: "a label name of 64 characters", edit: func(d *DeviceInfo) { d.Labels = map[string]string{strings.Repeat("k", 64): "v"} }, reason: ReasonField},
		{name: "a previous label that breaks the rules", edit: func(d *DeviceInfo) { d.Previous = &DeviceLabels{Labels: map[string]string{"x": "a\nb"}} }, reason: ReasonField},
		{name: "a tombstone with labels", edit: func(d *DeviceInfo) { d.Removed = true }, reason: ReasonField},
		{name: "a long hostname", edit: func(d *DeviceInfo) { d.Inventory.Hostname = strings.Repeat("h", MaxInventoryBytes+1) }, reason: ReasonField},
		{name: "a negative CPU count", edit: func(d *DeviceInfo) { d.Inventory.CPUs = -1 }, reason: ReasonField},
		{name: "oversize", edit: func(d *DeviceInfo) { d.Inventory.Kernel = strings.Repeat("k", MaxDeviceRecordBytes) }, reason: ReasonOversize},
		{name: "another version", edit: func(d *DeviceInfo) { d.Version = 0 }, reason: ReasonVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good
			d.Labels = map[string]string{}
			for k, v := range good.Labels {
				d.Labels[k] = v
			}
			tt.edit(&d)
			key := tt.key
			if key == "" {
				key = d.ID
			}
			_, err := DecodeDeviceAt(key, Encode(d))
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("DecodeDeviceAt: reason %q (%v), want %q", got, err, tt.reason)
			}
		})
	}
}

func TestDecodeHeartbeatBounds(t *testing.T) {
	tests := []struct {
		name   string
		h      any
		reason string
	}{
		{name: "a live heartbeat (positive control)", h: Heartbeat{Version: ContractVersion}},
		{name: "a lapsed record", h: Heartbeat{Version: ContractVersion, Lapsed: &DeviceLabels{Labels: map[string]string{"zone": "a"}}}},
		{name: "a forged lapse with labels beyond the rules", h: Heartbeat{Version: ContractVersion, Lapsed: &DeviceLabels{Labels: map[string]string{"-x": "a"}}}, reason: ReasonField},
		{name: "a replaced tombstone with labels", h: Heartbeat{Version: ContractVersion, Replaced: &DeviceLabels{Removed: true, Labels: map[string]string{"a": "b"}}}, reason: ReasonField},
		{name: "padding beyond the bound", h: map[string]any{"v": ContractVersion, "pad": strings.Repeat("p", MaxHeartbeatRecordBytes)}, reason: ReasonOversize},
		{name: "another version", h: Heartbeat{Version: ContractVersion + 1}, reason: ReasonVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeHeartbeat(Encode(tt.h))
			if got := reasonOf(err); got != tt.reason {
				t.Fatalf("DecodeHeartbeat: reason %q (%v), want %q", got, err, tt.reason)
			}
		})
	}
}

func TestSanitizeMessage(t *testing.T) {
	long := strings.Repeat("é", MaxMessageBytes) // two bytes each: a cut may fall inside one
	tests := []struct {
		name, in, want string
	}{
		{"a plain message is kept (positive control)", "pull: manifest unknown", "pull: manifest unknown"},
		{"line breaks and tabs become spaces", "line 1\nline 2\tx\r", "line 1 line 2 x "},
		{"terminal escapes and NULs are dropped", "red\x1b[31m\x00!", "red[31m!"},
		{"bidirectional overrides are dropped", "abc\u202edef", "abcdef"},
		{"invalid UTF-8 is replaced", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SanitizeMessage(tt.in); got != tt.want {
				t.Errorf("SanitizeMessage(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	t.Run("a long message is cut at a character boundary", func(t *testing.T) {
		got := SanitizeMessage(long)
		if len(got) > MaxMessageBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
			t.Errorf("cut to %d bytes, valid UTF-8 %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-5:])
		}
		if exact := strings.Repeat("x", MaxMessageBytes); SanitizeMessage(exact) != exact {
			t.Error("a message of exactly MaxMessageBytes was cut")
		}
	})
	t.Run("decoded and written messages are sanitized", func(t *testing.T) {
		s := Next(nil, 1, PhaseFailed, "boom\x1b]0;pwned\x07"+strings.Repeat("y", 2*MaxMessageBytes), time.Unix(0, 0))
		if len(s.Message) > MaxMessageBytes || strings.ContainsAny(s.Message, "\x1b\x07") {
			t.Errorf("Next kept %d bytes: %q…", len(s.Message), s.Message[:20])
		}
		raw := Encode(State{Version: ContractVersion, Generation: 1, Phase: PhaseFailed, Message: "a\x1bb"})
		d, err := DecodeState(raw)
		if err != nil || d.Message != "ab" {
			t.Errorf("DecodeState message %q, %v", d.Message, err)
		}
	})
}
