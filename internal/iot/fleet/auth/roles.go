package auth

import (
	"time"

	"fmt"

	"github.com/nats-io/jwt/v2"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// Role is what a user of the fleet account is: each role has its own scoped signing key, whose template
// is the only source of the user's permissions.
type Role string

// The roles.
const (
	// RoleDevice is a device's agent: it writes its own records and reads its own desired state.
	RoleDevice Role = "device"
	// RoleOperator is the platform operator's iot controller: it owns the buckets.
	RoleOperator Role = "operator"
	// RoleViewer is a person's read-only command line: it reads the fleet's records and asks devices
	// for their logs and events.
	RoleViewer Role = "viewer"
)

// Roles are every role, in the order cmd/fleet-auth creates their signing keys.
var Roles = []Role{RoleDevice, RoleOperator, RoleViewer}

// OperatorUser is the name of the operator's user.
const OperatorUser = "operator"

// roleTag is the JWT tag that names a user's role, so that ClientOptions can pick its inbox prefix.
const roleTag = "fleet-role:"

// maxLogReplies is the most messages of one log reply: agent.DefaultLogLines chunks of one line each,
// then the end marker (a test keeps it equal).
const maxLogReplies = 10000 + 1

// nameTemplate is replaced by the server with the connecting user's name (the device ID).
const nameTemplate = "{{name()}}"

// ValidateName says why name cannot be a user of role r, or nil: every name is one subject token (a
// device's name is its device ID).
func ValidateName(r Role, name string) error {
	switch r {
	case RoleDevice:
		return fleet.ValidDeviceID(name)
	case RoleOperator:
		if name != OperatorUser {
			return fmt.Errorf("the operator's user is named %q, not %q", OperatorUser, name)
		}
		return nil
	case RoleViewer:
		if !fleet.ValidToken(name) {
			return fmt.Errorf("viewer name %q must be 1-128 letters, digits, '-' or '_'", name)
		}
		return nil
	}
	return fmt.Errorf("unknown role %q", r)
}

// InboxPrefix is where a user of role r named name receives replies (nats.CustomInboxPrefix): the only
// inboxes its permissions let it subscribe to. A device's is _INBOX_<device>; the operator's and the
// viewers' start with the token _INBOX, which no device's prefix can be, so no device ID reaches them.
func InboxPrefix(r Role, name string) string {
	switch r {
	case RoleDevice:
		return "_INBOX_" + name
	case RoleViewer:
		return "_INBOX.viewer." + name
	default:
		return "_INBOX.operator"
	}
}

var buckets = []string{fleet.BucketDevices, fleet.BucketDesired, fleet.BucketState, fleet.BucketHeartbeats}

// eventsSubject is where a device's agent serves its recent events (agent.EventsSubject; a test keeps
// them equal).
func eventsSubject(device string) string {
	return fmt.Sprintf("fleet.v%d.events.%s", fleet.ContractVersion, device)
}

func kvSubject(bucket, key string) string { return "$KV." + bucket + "." + key }

func stream(bucket string) string { return "KV_" + bucket }

// directGet is the subject of a direct get of the last record of key: the server answers only for that
// subject and refuses a request body that asks for another record.
func directGet(bucket, key string) string {
	return "$JS.API.DIRECT.GET." + stream(bucket) + "." + kvSubject(bucket, key)
}

// watch is the subject of creating a consumer on bucket filtered to keys: the server refuses a request
// whose configured filter differs from the subject's.
func watch(bucket, keys string) string {
	return "$JS.API.CONSUMER.CREATE." + stream(bucket) + ".*." + kvSubject(bucket, keys)
}

func streamInfo(bucket string) string { return "$JS.API.STREAM.INFO." + stream(bucket) }

// flowControl is where a watcher answers the server's flow control of its push consumer.
func flowControl(bucket string) string { return "$JS.FC." + stream(bucket) + ".>" }

// Device is the permission template of every device. The server substitutes the device's ID for
// {{name()}}, so a device writes only its own state, heartbeat and device records, reads only its own
// desired state and serves only its own logs.
func Device() jwt.Permissions {
	me := nameTemplate
	p := jwt.Permissions{}
	p.Pub.Allow.Add(
		kvSubject(fleet.BucketState, fleet.StateKey(fleet.DeploymentKey{Namespace: "*", Name: "*"}, me)),
		kvSubject(fleet.BucketHeartbeats, fleet.DeviceKey(me)),
		kvSubject(fleet.BucketDevices, fleet.DeviceKey(me)),
		directGet(fleet.BucketDesired, fleet.DesiredKey(me, fleet.DeploymentKey{Namespace: "*", Name: "*"})),
		directGet(fleet.BucketState, fleet.StateKey(fleet.DeploymentKey{Namespace: "*", Name: "*"}, me)),
		directGet(fleet.BucketHeartbeats, fleet.DeviceKey(me)),
		directGet(fleet.BucketDevices, fleet.DeviceKey(me)),
		watch(fleet.BucketDesired, fleet.DesiredDeviceFilter(me)),
		// Stopping a watch deletes its consumer (otherwise the client waits for a reply that never
		// comes). Consumer names are random: a device cannot name another's to delete it.
		"$JS.API.CONSUMER.DELETE."+stream(fleet.BucketDesired)+".*",
		flowControl(fleet.BucketDesired),
	)
	for _, b := range buckets {
		p.Pub.Allow.Add(streamInfo(b))
	}
	p.Sub.Allow.Add(InboxPrefix(RoleDevice, me)+".>", fleet.LogsSubject(me), eventsSubject(me))
	// A log reply is a stream of chunks (at most one per line) and an end marker, to the requester's
	// inbox, within the agent's minute for a request.
	p.Resp = &jwt.ResponsePermission{MaxMsgs: maxLogReplies, Expires: 2 * time.Minute}
	return p
}

// Operator is the permission template of the operator's user: the fleet's buckets (creating and
// configuring them, reading and writing every key, watching, purging) and log requests to any device.
func Operator() jwt.Permissions {
	p := jwt.Permissions{}
	p.Pub.Allow.Add("$JS.API.INFO", fleet.LogsSubject("*"), eventsSubject("*"))
	for _, b := range buckets {
		p.Pub.Allow.Add(
			"$JS.API.STREAM.*."+stream(b),
			"$JS.API.STREAM.MSG.*."+stream(b),
			"$JS.API.CONSUMER.*."+stream(b)+".>",
			"$JS.API.DIRECT.GET."+stream(b)+".>",
			"$JS.API.DIRECT.GET."+stream(b),
			kvSubject(b, ">"),
			flowControl(b),
			"$JS.ACK."+stream(b)+".>",
		)
	}
	p.Sub.Allow.Add(InboxPrefix(RoleOperator, OperatorUser) + ".>")
	return p
}

// Viewer is the permission template of a person's read-only command line: it reads every device's
// registry, state and heartbeat records (not the desired state, which holds the Deployments' scores:
// those are read in Kubernetes under its RBAC) and asks any device for its logs. It writes nothing.
func Viewer() jwt.Permissions {
	p := jwt.Permissions{}
	p.Pub.Allow.Add(fleet.LogsSubject("*"), eventsSubject("*"))
	for _, b := range []string{fleet.BucketDevices, fleet.BucketState, fleet.BucketHeartbeats} {
		p.Pub.Allow.Add(
			streamInfo(b),
			directGet(b, ">"),
			watch(b, ">"),
			"$JS.API.CONSUMER.DELETE."+stream(b)+".*",
			flowControl(b),
		)
	}
	p.Sub.Allow.Add(InboxPrefix(RoleViewer, nameTemplate) + ".>")
	return p
}

// Permissions is role r's template.
func Permissions(r Role) (jwt.Permissions, error) {
	switch r {
	case RoleDevice:
		return Device(), nil
	case RoleOperator:
		return Operator(), nil
	case RoleViewer:
		return Viewer(), nil
	}
	return jwt.Permissions{}, fmt.Errorf("unknown role %q", r)
}
