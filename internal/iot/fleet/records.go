package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

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
	// Credential is the device's NATS user JWT (public; its seed stays on the device), which carries
	// the credential labels fleet-auth device --labels gave it: the only labels a namespace policy
	// matches (docs/fleet.md, "Credential labels"). Optional.
	Credential string `json:"credential,omitempty"`
	// CredentialLabels are the labels of Credential once the operator verified it (LabelTrust); never
	// read from the record.
	CredentialLabels map[string]string `json:"-"`
}

// LabelTrust rewrites a decoded device record's labels (and its Previous labels) into the labels
// selectors see: the operator's is auth.Verifier.Trust, which keeps the labels a namespace policy
// names only when the device's credential carries them. Nil leaves the record as the device wrote it.
type LabelTrust func(d *DeviceInfo)

// DeviceLabels are what a selector sees of a device record: its labels, or that it is a tombstone.
type DeviceLabels struct {
	Labels  map[string]string `json:"labels,omitempty"`
	Removed bool              `json:"removed,omitempty"`
	// Credential are the labels of the device's verified credential among Labels (the operator's
	// LabelTrust sets them; in a lapsed or replaced heartbeat record, the operator wrote them): a
	// selector's requirements on a key its namespace's policy names match only these (View).
	Credential map[string]string `json:"credential,omitempty"`
	// LastBeat is set in a lapsed record only (the operator writes it): the device's last heartbeat
	// before it lapsed, as the server's expiry dates it (the marker's time less the bucket's TTL). An
	// agent's `replaced`, a copy of the lapsed object, carries it back, which takes the device out of
	// the index's heartbeat times (BeatRange).
	LastBeat *time.Time `json:"lastBeat,omitempty"`
}

// View is what a selector of a namespace whose policy names the label keys trusted sees of l: its
// labels, without the trusted keys its credential does not carry.
func (l *DeviceLabels) View(trusted []string) map[string]string {
	if len(trusted) == 0 {
		return l.Labels
	}
	out := make(map[string]string, len(l.Labels))
	for k, v := range l.Labels {
		if _, cred := l.Credential[k]; cred || !slices.Contains(trusted, k) {
			out[k] = v
		}
	}
	return out
}

// Selectable says whether the record is a device deployments may select: registered and not removed.
func (l *DeviceLabels) Selectable() bool { return l != nil && !l.Removed }

// Selection is the record's labels for a selector: nil for a tombstone.
func (d *DeviceInfo) Selection() *DeviceLabels {
	return &DeviceLabels{Labels: d.Labels, Removed: d.Removed, Credential: d.CredentialLabels}
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

// DecodeHeartbeat reads a Heartbeat, refusing records beyond the bounds (Bounds) and other contract
// versions; the error is a *RecordError.
func DecodeHeartbeat(data []byte) (*Heartbeat, error) {
	var h Heartbeat
	if err := decode(RecordsHeartbeats, data, MaxHeartbeatRecordBytes, &h, &h.Version); err != nil {
		return nil, err
	}
	if err := validLabels(RecordsHeartbeats, "lapsed", h.Lapsed); err != nil {
		return nil, err
	}
	if err := validLabels(RecordsHeartbeats, "replaced", h.Replaced); err != nil {
		return nil, err
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
	// RollbackOf, when set, is the failed generation this record takes back: Generation and Score are
	// then an earlier, successful generation's, given again by a rollback. Agents need not read it; the
	// operator reads it to know which devices it rolled back.
	RollbackOf int64 `json:"rollbackOf,omitempty"`
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
	msg = SanitizeMessage(msg)
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

// DecodeState reads a State, refusing records beyond the bounds (Bounds), other contract versions,
// phases it does not know, generations outside 1..MaxGeneration and a previous phase without a previous
// generation (or the reverse); the error is a *RecordError. The message comes back sanitized
// (SanitizeMessage): it is what a status and an event may show.
func DecodeState(data []byte) (*State, error) {
	var s State
	if err := decode(RecordsState, data, MaxStateRecordBytes, &s, &s.Version); err != nil {
		return nil, err
	}
	if !s.Phase.valid() || s.Phase == PhaseNone || !s.PrevPhase.valid() {
		return nil, fieldError(RecordsState, "phase %q (previous %q) is not a phase of the contract", clip(string(s.Phase)), clip(string(s.PrevPhase)))
	}
	if s.Generation < 1 || s.Generation > MaxGeneration {
		return nil, fieldError(RecordsState, "generation %d is outside 1..2^53", s.Generation)
	}
	if (s.PrevPhase == PhaseNone) != (s.PrevGeneration == 0) || s.PrevGeneration < 0 || s.PrevGeneration > MaxGeneration {
		return nil, fieldError(RecordsState, "previous generation %d does not go with previous phase %q", s.PrevGeneration, s.PrevPhase)
	}
	s.Message = SanitizeMessage(s.Message)
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

// DecodeDevice reads a DeviceInfo, refusing records beyond the bounds (Bounds), other contract versions
// and invalid IDs; the error is a *RecordError. Whether the record names the device of its key is the
// caller's check (DecodeDeviceAt).
func DecodeDevice(data []byte) (*DeviceInfo, error) {
	var d DeviceInfo
	if err := decode(RecordsDevices, data, MaxDeviceRecordBytes, &d, &d.Version); err != nil {
		return nil, err
	}
	if !ValidToken(d.ID) {
		return nil, fieldError(RecordsDevices, "device ID %q is not 1-128 letters, digits, '-' or '_'", clip(d.ID))
	}
	if d.Removed && len(d.Labels) > 0 {
		return nil, fieldError(RecordsDevices, "a tombstone has labels")
	}
	if err := validLabels(RecordsDevices, "labels", &DeviceLabels{Labels: d.Labels}); err != nil {
		return nil, err
	}
	if err := validLabels(RecordsDevices, "previous", d.Previous); err != nil {
		return nil, err
	}
	if err := d.Inventory.valid(); err != nil {
		return nil, err
	}
	return &d, nil
}

// DecodeDeviceAt reads the DeviceInfo stored under key: DecodeDevice, and a record whose ID is not its
// key is refused as ReasonForeign (the key is the device's identity, the one its credentials allow).
func DecodeDeviceAt(key string, data []byte) (*DeviceInfo, error) {
	d, err := DecodeDevice(data)
	if err != nil {
		return nil, err
	}
	if d.ID != key {
		return nil, &RecordError{Records: RecordsDevices, Reason: ReasonForeign, Err: fmt.Errorf("record of device %q stored under key %q", clip(d.ID), clip(key))}
	}
	return d, nil
}

// The bounds of what a device may write (docs/fleet.md, "Bad input"). A record beyond them is refused:
// it counts nowhere and is reported (a *RecordError, counted by reason).
const (
	// MaxDeviceRecordBytes is the largest device record, also the device bucket's MaxValueSize.
	MaxDeviceRecordBytes = 16 << 10
	// MaxStateRecordBytes is the largest state record, also the state bucket's MaxValueSize.
	MaxStateRecordBytes = 4 << 10
	// MaxHeartbeatRecordBytes is the largest heartbeat record, also the heartbeat bucket's MaxValueSize.
	MaxHeartbeatRecordBytes = 4 << 10
	// MaxLabels is how many labels a device record (and the labels a record names as previous, lapsed
	// or replaced) may carry; each key and value follows the Kubernetes label rules.
	MaxLabels = 64
	// MaxInventoryBytes bounds each string of a device's inventory.
	MaxInventoryBytes = 256
	// MaxCPUs bounds the inventory's CPU count.
	MaxCPUs = 1 << 16
	// MaxGeneration is the largest generation a record may name: 2^53, the largest integer every JSON
	// reader keeps exactly (a Deployment's metadata.generation never gets near it).
	MaxGeneration = 1 << 53
	// MaxMessageBytes is the longest device message (a state's message) a status or an event shows:
	// longer ones are cut at a UTF-8 boundary and end with "…".
	MaxMessageBytes = 1 << 10
)

// The records' buckets as the rejected-records metric names them.
const (
	RecordsDevices    = "devices"
	RecordsState      = "state"
	RecordsHeartbeats = "heartbeats"
)

// Why a record was refused: the reason label of platform_operator_fleet_rejected_records_total.
const (
	// ReasonDecode is a record that is not the contract's JSON.
	ReasonDecode = "decode"
	// ReasonVersion is a record of another contract version.
	ReasonVersion = "version"
	// ReasonOversize is a record larger than its bucket's bound.
	ReasonOversize = "oversize"
	// ReasonField is a field beyond its bound (labels, inventory, generation, phase).
	ReasonField = "field"
	// ReasonForeign is a record under a key outside the contract, or naming another device than its key.
	ReasonForeign = "foreign"
	// ReasonUntargeted is a state record for a Deployment that does not target its device: no desired
	// state exists for that device and Deployment (or it was withdrawn, and the record is not Removed).
	ReasonUntargeted = "untargeted"
)

// RejectReasons are every reason, for metrics that show each from the start.
var RejectReasons = []string{ReasonDecode, ReasonVersion, ReasonOversize, ReasonField, ReasonForeign, ReasonUntargeted}

// RecordError is a record refused on decode: which bucket's record, why (a Reason*), and the detail.
// The detail quotes at most a few sanitized bytes of what the device sent.
type RecordError struct {
	Records string
	Reason  string
	Err     error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("refused a %s record (%s): %v", e.Records, e.Reason, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

func fieldError(records, format string, args ...any) error {
	return &RecordError{Records: records, Reason: ReasonField, Err: fmt.Errorf(format, args...)}
}

// decode reads data into v after checking its size against limit, then its contract version (at
// *version once decoded).
func decode(records string, data []byte, limit int, v any, version *int) error {
	if len(data) > limit {
		return &RecordError{Records: records, Reason: ReasonOversize, Err: fmt.Errorf("%d bytes, at most %d", len(data), limit)}
	}
	if err := json.Unmarshal(data, v); err != nil {
		// A record of another version may not fit this one's types: say version when it says one.
		var probe struct {
			V int `json:"v"`
		}
		if json.Unmarshal(data, &probe) == nil && probe.V != ContractVersion {
			return &RecordError{Records: records, Reason: ReasonVersion, Err: fmt.Errorf("contract version %d, want %d", probe.V, ContractVersion)}
		}
		return &RecordError{Records: records, Reason: ReasonDecode, Err: errors.New("not a JSON record of the contract")}
	}
	if *version != ContractVersion {
		return &RecordError{Records: records, Reason: ReasonVersion, Err: fmt.Errorf("contract version %d, want %d", *version, ContractVersion)}
	}
	return nil
}

// validLabels checks the labels a record names (nil: none) against the Kubernetes label rules.
func validLabels(records, field string, l *DeviceLabels) error {
	if l == nil {
		return nil
	}
	if len(l.Labels) > MaxLabels || len(l.Credential) > MaxLabels {
		return fieldError(records, "%s: %d labels and %d credential labels, at most %d each", field, len(l.Labels), len(l.Credential), MaxLabels)
	}
	for k, v := range l.Credential {
		if l.Labels[k] != v {
			return fieldError(records, "%s: credential label %q is not among the labels", field, clip(k))
		}
	}
	if l.Removed && len(l.Labels) > 0 {
		return fieldError(records, "%s: a tombstone has labels", field)
	}
	for k, v := range l.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fieldError(records, "%s: label key %q: %s", field, clip(k), errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fieldError(records, "%s: label %s value %q: %s", field, k, clip(v), errs[0])
		}
	}
	return nil
}

func (inv *Inventory) valid() error {
	for name, v := range map[string]string{"hostname": inv.Hostname, "arch": inv.Arch, "os": inv.OS, "kernel": inv.Kernel, "agentVersion": inv.AgentVersion} {
		if len(v) > MaxInventoryBytes {
			return fieldError(RecordsDevices, "inventory %s: %d bytes, at most %d", name, len(v), MaxInventoryBytes)
		}
	}
	if inv.CPUs < 0 || inv.CPUs > MaxCPUs {
		return fieldError(RecordsDevices, "inventory cpus %d is outside 0..%d", inv.CPUs, MaxCPUs)
	}
	return nil
}

// SanitizeMessage is a device's message as a status or an event may show it: invalid UTF-8 replaced,
// line breaks and tabs turned into spaces, other control and format characters (bidirectional
// overrides, zero-width characters) dropped, and cut to MaxMessageBytes at a character boundary, ending
// with "…" when cut.
func SanitizeMessage(s string) string { return sanitize(s, MaxMessageBytes) }

// clip is a short sanitized quote of device input for an error message.
func clip(s string) string { return sanitize(s, 64) }

func sanitize(s string, limit int) string {
	clean := len(s) <= limit
	for _, r := range s {
		if !clean {
			break
		}
		clean = r != utf8.RuneError && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r)
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) <= limit {
		return out
	}
	const ellipsis = "…"
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + ellipsis
}
