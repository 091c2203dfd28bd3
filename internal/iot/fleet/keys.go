package fleet

import (
	"fmt"
	"regexp"
	"strings"
)

// ContractVersion is the version of the wire contract (buckets, keys, records) that docs/fleet.md
// describes. Every record carries it; a reader refuses a record of a version it does not know.
const ContractVersion = 2

// The buckets of the contract. Their names carry the contract version, so that a new contract can live
// beside the old one while agents upgrade.
const (
	// BucketDevices holds one DeviceInfo per device, written by the device's agent.
	BucketDevices = "fleet-v2-devices"
	// BucketDesired holds one Desired per device and deployment, written by the operator.
	BucketDesired = "fleet-v2-desired"
	// BucketState holds one State per deployment and device, written by the agent (and by the operator
	// when it withdraws a device), always with compare-and-swap on the key's revision.
	BucketState = "fleet-v2-state"
	// BucketHeartbeats holds one key per live device; the bucket's TTL removes the key of a device that
	// stops sending heartbeats. Heartbeats never rewrite state.
	BucketHeartbeats = "fleet-v2-heartbeats"
)

// DeploymentKey names a Deployment: its namespace and name, both valid NATS subject tokens (namespaces
// are DNS labels; admission refuses dots in a Deployment's name).
type DeploymentKey struct {
	Namespace, Name string
}

func (d DeploymentKey) String() string { return d.Namespace + "/" + d.Name }

// tokenRE is what a device ID and a deployment's namespace and name may be: one NATS subject token made
// of characters every shell and log handles, without dots, wildcards or whitespace.
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidToken says whether s can be one token of a key.
func ValidToken(s string) bool { return tokenRE.MatchString(s) }

// ValidDeviceID reports why a device ID cannot be used, or nil.
func ValidDeviceID(id string) error {
	if !ValidToken(id) {
		return fmt.Errorf("device ID %q must be 1-128 letters, digits, '-' or '_' (it is a NATS subject token)", id)
	}
	return nil
}

// DeviceKey is a device's key in BucketDevices and BucketHeartbeats.
func DeviceKey(device string) string { return device }

// DesiredKey is the key of a device's desired state for a deployment in BucketDesired. Device first, so
// an agent watches "<device>.>" for everything it should run.
func DesiredKey(device string, d DeploymentKey) string {
	return device + "." + d.Namespace + "." + d.Name
}

// DesiredConsumer is the name of device's consumer of BucketDesired: the only one its permissions let it
// create (or delete), so a device holds at most one.
func DesiredConsumer(device string) string { return device }

// DesiredDeviceFilter is the key filter of every desired state of one device.
func DesiredDeviceFilter(device string) string { return device + ".>" }

// DesiredDeploymentFilter is the key filter of every device's desired state for one deployment.
func DesiredDeploymentFilter(d DeploymentKey) string { return "*." + d.Namespace + "." + d.Name }

// StateKey is the key of a device's state for a deployment in BucketState. Deployment first, so the
// operator reads one deployment's states with "<namespace>.<name>.*".
func StateKey(d DeploymentKey, device string) string {
	return d.Namespace + "." + d.Name + "." + device
}

// StateDeploymentFilter is the key filter of every device's state for one deployment.
func StateDeploymentFilter(d DeploymentKey) string { return d.Namespace + "." + d.Name + ".*" }

// ParseDesiredKey splits a BucketDesired key into its device and deployment.
func ParseDesiredKey(key string) (string, DeploymentKey, error) {
	p := strings.Split(key, ".")
	if len(p) != 3 || !ValidToken(p[0]) || !ValidToken(p[1]) || !ValidToken(p[2]) {
		return "", DeploymentKey{}, fmt.Errorf("desired-state key %q is not <device>.<namespace>.<name>", key)
	}
	return p[0], DeploymentKey{Namespace: p[1], Name: p[2]}, nil
}

// ParseStateKey splits a BucketState key into its deployment and device.
func ParseStateKey(key string) (DeploymentKey, string, error) {
	p := strings.Split(key, ".")
	if len(p) != 3 || !ValidToken(p[0]) || !ValidToken(p[1]) || !ValidToken(p[2]) {
		return DeploymentKey{}, "", fmt.Errorf("state key %q is not <namespace>.<name>.<device>", key)
	}
	return DeploymentKey{Namespace: p[0], Name: p[1]}, p[2], nil
}
