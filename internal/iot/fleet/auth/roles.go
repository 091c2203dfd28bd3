package auth

import (
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

// Requester is how a user of role r named name names itself in a log or events request: the only
// requester its permissions let it name (fleet.LogsSubject), and whose answers only it may receive.
func Requester(r Role, name string) fleet.Requester {
	return fleet.Requester{Role: string(r), Name: name}
}

// requests are the log and events request subjects of requester r to any device.
func requests(r fleet.Requester) []string {
	return []string{fleet.LogsSubject("*", r), fleet.EventsSubject("*", r)}
}

// replies is the subscribe permission of requester r: every answer a device sends it.
func replies(r fleet.Requester) string { return fleet.ReplyPrefix(r) + ".>" }

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
		// One consumer of its desired state, named after the device (store.WatchDesired): the server
		// refuses any other name, so a device holds at most one consumer and touches no one else's.
		"$JS.API.CONSUMER.CREATE."+stream(fleet.BucketDesired)+"."+fleet.DesiredConsumer(me)+"."+kvSubject(fleet.BucketDesired, fleet.DesiredDeviceFilter(me)),
		"$JS.API.CONSUMER.DELETE."+stream(fleet.BucketDesired)+"."+fleet.DesiredConsumer(me),
		"$JS.API.CONSUMER.INFO."+stream(fleet.BucketDesired)+"."+fleet.DesiredConsumer(me),
		"$JS.API.CONSUMER.MSG.NEXT."+stream(fleet.BucketDesired)+"."+fleet.DesiredConsumer(me),
	)
	for _, b := range buckets {
		p.Pub.Allow.Add(streamInfo(b))
	}
	// Answers go only to a reply subject that names this device, under some requester's prefix, which
	// only that requester may subscribe to. No response permission: a device never publishes to a
	// reply subject a requester chose (a JetStream API subject, another device's key, someone's inbox).
	p.Pub.Allow.Add(fleet.DeviceReplySubjects(me))
	p.Sub.Allow.Add(InboxPrefix(RoleDevice, me)+".>", fleet.LogsServeSubject(me), fleet.EventsServeSubject(me))
	return p
}

// Operator is the permission template of the operator's user: the fleet's buckets (creating and
// configuring them, reading and writing every key, watching, purging) and log requests to any device.
func Operator() jwt.Permissions {
	p := jwt.Permissions{}
	p.Pub.Allow.Add("$JS.API.INFO")
	p.Pub.Allow.Add(requests(Requester(RoleOperator, OperatorUser))...)
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
	p.Sub.Allow.Add(InboxPrefix(RoleOperator, OperatorUser)+".>", replies(Requester(RoleOperator, OperatorUser)))
	return p
}

// Viewer is the permission template of a person's read-only command line: it reads every device's
// registry, state and heartbeat records (not the desired state, which holds the Deployments' scores:
// those are read in Kubernetes under its RBAC) and asks any device for its logs. It writes nothing.
func Viewer() jwt.Permissions {
	p := jwt.Permissions{}
	p.Pub.Allow.Add(requests(Requester(RoleViewer, nameTemplate))...)
	for _, b := range []string{fleet.BucketDevices, fleet.BucketState, fleet.BucketHeartbeats} {
		p.Pub.Allow.Add(
			streamInfo(b),
			directGet(b, ">"),
			watch(b, ">"),
			"$JS.API.CONSUMER.DELETE."+stream(b)+".*",
			flowControl(b),
		)
	}
	p.Sub.Allow.Add(InboxPrefix(RoleViewer, nameTemplate)+".>", replies(Requester(RoleViewer, nameTemplate)))
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
