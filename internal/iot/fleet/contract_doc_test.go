package fleet_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// contractDoc is the page that third parties write agents from.
const contractDoc = "../../../docs/fleet.md"

// docExample is one JSON example of docs/fleet.md, named by the marker line before its fence.
type docExample struct {
	name, json string
}

var exampleMarker = regexp.MustCompile(`^<!-- contract-example: ([a-z0-9-]+) -->$`)

// docExamples reads every fenced json block of the page with the name of its marker. A json block
// without a marker right before it has the name "".
func docExamples(t *testing.T) []docExample {
	t.Helper()
	data, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out        []docExample
		prev, name string
		in         bool
		body       strings.Builder
		sc         = bufio.NewScanner(bytes.NewReader(data))
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "```json":
			in, name = true, ""
			if m := exampleMarker.FindStringSubmatch(prev); m != nil {
				name = m[1]
			}
			body.Reset()
		case in && line == "```":
			in = false
			out = append(out, docExample{name: name, json: body.String()})
		case in:
			body.WriteString(line + "\n")
		}
		prev = line
	}
	if in {
		t.Fatal("an unterminated json block")
	}
	return out
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestContractExamples: every JSON example on the contract's page decodes with the real decoder into
// the value named here, and that value encodes to exactly the example (whitespace aside): the page shows
// what the writers write, and a change of a field's name, tag or type breaks this test.
func TestContractExamples(t *testing.T) {
	inv := fleet.Inventory{Hostname: "pi-7", Arch: "arm64", OS: "linux", Kernel: "6.6.31+rpt-rpi-v8", CPUs: 4, MemoryBytes: 8245637120, AgentVersion: "0.1.0"}
	lyon := &fleet.DeviceLabels{Labels: map[string]string{"site": "lyon", "tier": "edge"}}
	paris := &fleet.DeviceLabels{Labels: map[string]string{"site": "paris", "tier": "edge"}}
	lastBeat := at("2026-11-25T06:10:32Z")
	parisLapsed := &fleet.DeviceLabels{Labels: paris.Labels, LastBeat: &lastBeat}
	decodeDevice := func(b []byte) (any, error) { return fleet.DecodeDevice(b) }
	decodeDesired := func(b []byte) (any, error) { return fleet.DecodeDesired(b) }
	decodeState := func(b []byte) (any, error) { return fleet.DecodeState(b) }
	decodeHeartbeat := func(b []byte) (any, error) { return fleet.DecodeHeartbeat(b) }
	v := fleet.ContractVersion
	want := map[string]struct {
		decode func([]byte) (any, error)
		value  any
	}{
		"device-first": {decodeDevice, &fleet.DeviceInfo{Version: v, ID: "pi-7", Labels: lyon.Labels, Inventory: inv}},
		"device-relabelled": {decodeDevice, &fleet.DeviceInfo{Version: v, ID: "pi-7", Labels: paris.Labels, Inventory: inv,
			Previous: lyon}},
		"device-tombstone": {decodeDevice, &fleet.DeviceInfo{Version: v, ID: "pi-7", Removed: true, Previous: paris}},
		"desired": {decodeDesired, &fleet.Desired{Version: v, Generation: 3, Score: iotv1.Score{Type: iotv1.ScorePodmanV0,
			PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{Name: "web", Image: "registry.example.com/web:1.4",
				Ports: []iotv1.Port{{ContainerPort: 8080, HostPort: 80}}}}}}}},
		"desired-rollback": {decodeDesired, &fleet.Desired{Version: v, Generation: 3, Score: iotv1.Score{Type: iotv1.ScorePodmanV0,
			PodmanV0: &iotv1.PodmanV0Score{Services: []iotv1.Service{{Name: "web", Image: "registry.example.com/web:1.4",
				Ports: []iotv1.Port{{ContainerPort: 8080, HostPort: 80}}}}}}, RollbackOf: 4}},
		"state-first": {decodeState, &fleet.State{Version: v, Generation: 3, Phase: fleet.PhasePending,
			At: at("2026-11-25T06:10:00.123456789Z")}},
		"state-failed": {decodeState, &fleet.State{Version: v, Generation: 3, Phase: fleet.PhaseFailed, PrevGeneration: 3,
			PrevPhase: fleet.PhasePending, Message: "service web: pull registry.example.com/web:1.4: manifest unknown",
			At: at("2026-11-25T06:10:04.5Z")}},
		"state-removed": {decodeState, &fleet.State{Version: v, Generation: 3, Phase: fleet.PhaseRemoved, PrevGeneration: 3,
			PrevPhase: fleet.PhaseFailed, Message: "withdrawn", At: at("2026-11-25T06:30:00Z")}},
		"heartbeat":          {decodeHeartbeat, &fleet.Heartbeat{Version: v, At: at("2026-11-25T06:10:10.000000001Z")}},
		"heartbeat-lapsed":   {decodeHeartbeat, &fleet.Heartbeat{Version: v, At: at("2026-11-25T06:11:02.25Z"), Lapsed: parisLapsed}},
		"heartbeat-replaced": {decodeHeartbeat, &fleet.Heartbeat{Version: v, At: at("2026-11-25T07:00:00Z"), Replaced: parisLapsed}},
		"heartbeat-lapsed-removed": {decodeHeartbeat, &fleet.Heartbeat{Version: v, At: at("2026-11-25T06:40:00Z"),
			Lapsed: &fleet.DeviceLabels{Removed: true, LastBeat: &lastBeat}, Replaced: parisLapsed}},
	}
	seen := map[string]bool{}
	for _, ex := range docExamples(t) {
		if ex.name == "" {
			t.Errorf("a json example without a contract-example marker (so no test checks it):\n%s", ex.json)
			continue
		}
		w, ok := want[ex.name]
		if !ok {
			t.Errorf("example %q: the test names no value for it", ex.name)
			continue
		}
		if seen[ex.name] {
			t.Errorf("example %q appears twice", ex.name)
		}
		seen[ex.name] = true
		got, err := w.decode([]byte(ex.json))
		if err != nil {
			t.Errorf("example %q does not decode: %v", ex.name, err)
			continue
		}
		if !reflect.DeepEqual(got, w.value) {
			t.Errorf("example %q decodes to\n%#v\nwant\n%#v", ex.name, got, w.value)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(ex.json)); err != nil {
			t.Fatal(err)
		}
		if enc := fleet.Encode(w.value); !bytes.Equal(enc, compact.Bytes()) {
			t.Errorf("example %q is not what the writers write:\n doc   %s\n wrote %s", ex.name, compact.Bytes(), enc)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("example %q is missing from %s", name, contractDoc)
		}
	}
}

// TestContractNoneAndTimes: what the page promises readers accept beyond what writers write. "None" may
// be an absent field, null, 0 or "" alike, and a time may carry any RFC 3339 offset.
func TestContractNoneAndTimes(t *testing.T) {
	first := &fleet.State{Version: fleet.ContractVersion, Generation: 3, Phase: fleet.PhasePending, At: at("2026-11-25T06:10:00Z")}
	tests := []struct {
		name, json string
	}{
		{"absent", `{"v":2,"generation":3,"phase":"Pending","at":"2026-11-25T06:10:00Z"}`},
		{"null", `{"v":2,"generation":3,"phase":"Pending","prevGeneration":null,"prevPhase":null,"message":null,"at":"2026-11-25T06:10:00Z"}`},
		{"zero", `{"v":2,"generation":3,"phase":"Pending","prevGeneration":0,"prevPhase":"","message":"","at":"2026-11-25T06:10:00Z"}`},
		{"offset", `{"v":2,"generation":3,"phase":"Pending","at":"2026-11-25T07:10:00+01:00"}`},
	}
	for _, tt := range tests {
		got, err := fleet.DecodeState([]byte(tt.json))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !got.At.Equal(first.At) {
			t.Errorf("%s: at %v, want the instant %v", tt.name, got.At, first.At)
		}
		got.At = first.At
		if !reflect.DeepEqual(got, first) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, first)
		}
	}
	// A previous phase without a previous generation (or the reverse) is refused: none goes together.
	for _, bad := range []string{
		`{"v":2,"generation":3,"phase":"Running","prevPhase":"Pending","at":"2026-11-25T06:10:00Z"}`,
		`{"v":2,"generation":3,"phase":"Running","prevGeneration":3,"at":"2026-11-25T06:10:00Z"}`,
	} {
		if _, err := fleet.DecodeState([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	for _, d := range []string{`{"v":2,"id":"pi-7","inventory":{},"previous":null}`, `{"v":2,"id":"pi-7","inventory":{}}`} {
		got, err := fleet.DecodeDevice([]byte(d))
		if err != nil || got.Previous != nil || got.Labels != nil {
			t.Errorf("%s: %+v, %v", d, got, err)
		}
	}
	// Writers write UTC, whatever the clock's zone.
	paris := time.FixedZone("CET", 3600)
	n := fleet.Next(nil, 3, fleet.PhasePending, "", time.Date(2026, 11, 25, 7, 10, 0, 500, paris))
	if got, want := string(fleet.Encode(n)), `"at":"2026-11-25T06:10:00.0000005Z"`; !strings.Contains(got, want) {
		t.Errorf("encoded %s, want %s", got, want)
	}
}
