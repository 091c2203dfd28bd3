package fleet

import (
	"encoding/json"
	"fmt"
	"time"

	iotv1 "github.com/platform-operator/platform-operator/api/iot/v1alpha1"
)

// Phase is where a device stands with one deployment.
type Phase string

const (
	// PhaseNone is the phase before a device's first record: a first record has it as its previous phase.
	PhaseNone Phase = ""
	// PhasePending is a device that received a desired state and is applying it.
	PhasePending Phase = "Pending"
	// PhaseRunning is a device whose containers run the desired state.
	PhaseRunning Phase = "Running"
	// PhaseFailed is a device that could not run the desired state.
	PhaseFailed Phase = "Failed"
	// PhaseRemoved is a device the deployment no longer has: the operator withdrew it. It counts in no
	// phase.
	PhaseRemoved Phase = "Removed"
)

// Counted says whether a device in phase p counts in a phase counter.
func (p Phase) Counted() bool { return p == PhasePending || p == PhaseRunning || p == PhaseFailed }

func (p Phase) valid() bool { return p == PhaseNone || p == PhaseRemoved || p.Counted() }

// Inventory is what an agent reports about its device.
type Inventory struct {
	Hostname     string `json:"hostname,omitempty"`
	Arch         string `json:"arch,omitempty"`
	OS           string `json:"os,omitempty"`
	Kernel       string `json:"kernel,omitempty"`
	CPUs         int    `json:"cpus,omitempty"`
	MemoryBytes  uint64 `json:"memoryBytes,omitempty"`
	AgentVersion string `json:"agentVersion,omitempty"`
}

// DeviceInfo is a device's record in BucketDevices: its labels, which deployments select on, and its
// inventory. Like a State, it is written only on change, with compare-and-swap on the revision of the
// record it replaces, and says what that record's labels were (Previous): the operator moves its
// per-selector count of matched devices from the previous labels to the new ones without remembering any
// device. A removed device keeps a record with Removed set (a tombstone), so that its removal is counted
// too.
type DeviceInfo struct {
	Version   int               `json:"v"`
	ID        string            `json:"id"`
	Labels    map[string]string `json:"labels,omitempty"`
	Inventory Inventory         `json:"inventory"`
	// Removed marks the tombstone of a removed device: it has no labels and no deployment selects it.
	Removed bool `json:"removed,omitempty"`
	// Previous is the record this one replaced; nil for a device's first record.
	Previous *DeviceLabels `json:"previous,omitempty"`
}

// DeviceLabels are what a selector sees of a device record: its labels, or that it is a tombstone.
type DeviceLabels struct {
	Labels  map[string]string `json:"labels,omitempty"`
	Removed bool              `json:"removed,omitempty"`
}

// Selectable says whether the record is a device deployments may select: registered and not removed.
func (l *DeviceLabels) Selectable() bool { return l != nil && !l.Removed }

// Selection is the record's labels for a selector: nil for a tombstone.
func (d *DeviceInfo) Selection() *DeviceLabels {
	return &DeviceLabels{Labels: d.Labels, Removed: d.Removed}
}

// Heartbeat is a device's record in BucketHeartbeats. The agent writes one every third of the bucket's
// TTL, with compare-and-swap on the revision of the record it replaces; a device that stops lets the
// bucket's TTL remove its key, which leaves a marker the operator sees. The operator then writes a
// lapsed record (Lapsed set, kept until the device comes back: it never expires) with the labels the
// device had, and counts the device stale under those labels; the agent's first heartbeat after that
// says which lapse it replaced (Replaced), which counts the device out again. A lapsed record is
// rewritten (Replaced and Lapsed) when a lapsed device is relabelled or removed. So the stale counts move
// with records, as the phase counts do, and the operator keeps no list of devices.
type Heartbeat struct {
	Version int       `json:"v"`
	At      time.Time `json:"at"`
	// Lapsed is set on the operator's record of a lapsed device: the labels it is counted stale under
	// (nil labels: the device was removed, and counts nowhere).
	Lapsed *DeviceLabels `json:"lapsed,omitempty"`
	// Replaced is the lapse this record replaced, if it replaced a lapsed record.
	Replaced *DeviceLabels `json:"replaced,omitempty"`
}

// DecodeHeartbeat reads a Heartbeat, refusing other contract versions.
func DecodeHeartbeat(data []byte) (*Heartbeat, error) {
	var h Heartbeat
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("decode heartbeat: %w", err)
	}
	if h.Version != ContractVersion {
		return nil, fmt.Errorf("heartbeat record of contract version %d, want %d", h.Version, ContractVersion)
	}
	return &h, nil
}

// Desired is a device's desired state for one deployment in BucketDesired.
type Desired struct {
	Version int `json:"v"`
	// Generation is the Deployment's metadata.generation this score belongs to; the device reports it
	// back in its State.
	Generation int64 `json:"generation"`
	// Score is what to run.
	Score iotv1.Score `json:"score"`
}

// State is a device's state for one deployment in BucketState: its phase for a generation, and the
// generation and phase of the record it replaced. A writer writes only on change, and only with
// compare-and-swap on the revision of the record it read, so the records of one key form one chain in
// which each record's previous phase is the phase of the record before it: the counters move from the
// previous to the new phase without remembering any device.
type State struct {
	Version        int       `json:"v"`
	Generation     int64     `json:"generation"`
	Phase          Phase     `json:"phase"`
	PrevGeneration int64     `json:"prevGeneration,omitempty"`
	PrevPhase      Phase     `json:"prevPhase,omitempty"`
	Message        string    `json:"message,omitempty"`
	At             time.Time `json:"at"`
}

// Next is the record that replaces s (nil: no record yet) with phase p for generation gen, or nil when s
// already says exactly that (a transition is written only on change).
func Next(s *State, gen int64, p Phase, msg string, at time.Time) *State {
	n := &State{Version: ContractVersion, Generation: gen, Phase: p, Message: msg, At: at.UTC()}
	if s != nil {
		if s.Generation == gen && s.Phase == p && s.Message == msg {
			return nil
		}
		n.PrevGeneration, n.PrevPhase = s.Generation, s.Phase
	}
	return n
}

// Encode is a record's wire form.
func Encode(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fleet: encode %T: %v", v, err)) // the records hold only JSON-safe values
	}
	return data
}

// DecodeState reads a State, refusing other contract versions and phases it does not know.
func DecodeState(data []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode state: %w", err)
	}
	if s.Version != ContractVersion {
		return nil, fmt.Errorf("state record of contract version %d, want %d", s.Version, ContractVersion)
	}
	if !s.Phase.valid() || s.Phase == PhaseNone || !s.PrevPhase.valid() {
		return nil, fmt.Errorf("state record with unknown phase %q (previous %q)", s.Phase, s.PrevPhase)
	}
	return &s, nil
}

// DecodeDesired reads a Desired, refusing other contract versions.
func DecodeDesired(data []byte) (*Desired, error) {
	var d Desired
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode desired state: %w", err)
	}
	if d.Version != ContractVersion {
		return nil, fmt.Errorf("desired-state record of contract version %d, want %d", d.Version, ContractVersion)
	}
	return &d, nil
}

// DecodeDevice reads a DeviceInfo, refusing other contract versions and invalid IDs.
func DecodeDevice(data []byte) (*DeviceInfo, error) {
	var d DeviceInfo
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("decode device: %w", err)
	}
	if d.Version != ContractVersion {
		return nil, fmt.Errorf("device record of contract version %d, want %d", d.Version, ContractVersion)
	}
	if err := ValidDeviceID(d.ID); err != nil {
		return nil, err
	}
	return &d, nil
}
