package fleet

import (
	"fmt"
	"strings"
)

// Request/reply subjects of contract v2. A request names its requester (a role token and a name token)
// in its subject, where the requester's NATS permissions allow only its own role and name, so the server
// vouches for it; the device answers only to ReplySubject of that requester, which only that requester
// may subscribe to and which is the only reply a device may publish (its permissions name nothing else).
// Role and name are two tokens so that a viewer named "operator" is not the operator.
const (
	logsPrefix   = "fleet.v2.logs."
	eventsPrefix = "fleet.v2.events."
	replyPrefix  = "fleet.v2.reply."
)

// Requester is who sends a log or events request: its role and its name, each one subject token.
type Requester struct {
	Role, Name string
}

func (r Requester) String() string { return r.Role + "/" + r.Name }

// Valid says why r cannot name a requester, or nil.
func (r Requester) Valid() error {
	if !ValidToken(r.Role) || !ValidToken(r.Name) {
		return fmt.Errorf("requester %q/%q: role and name must each be 1-128 letters, digits, '-' or '_'", r.Role, r.Name)
	}
	return nil
}

// LogsSubject is the subject of requester r's log requests to device.
func LogsSubject(device string, r Requester) string {
	return logsPrefix + device + "." + r.Role + "." + r.Name
}

// EventsSubject is the subject of requester r's events requests to device.
func EventsSubject(device string, r Requester) string {
	return eventsPrefix + device + "." + r.Role + "." + r.Name
}

// LogsServeSubject is what device's agent subscribes to for log requests: every requester's. device may
// be "{{name()}}", in a permission template.
func LogsServeSubject(device string) string { return logsPrefix + device + ".*.*" }

// EventsServeSubject is what device's agent subscribes to for events requests: every requester's.
func EventsServeSubject(device string) string { return eventsPrefix + device + ".*.*" }

// ReplySubject is where device answers requester r's request: nonce (one token, chosen by the requester)
// tells one request's answer from another's.
func ReplySubject(r Requester, device, nonce string) string {
	return ReplyPrefix(r) + "." + device + "." + nonce
}

// ReplyPrefix is the subject prefix of every answer to requester r (its subscribe permission is this
// prefix followed by ".>").
func ReplyPrefix(r Requester) string { return replyPrefix + r.Role + "." + r.Name }

// DeviceReplySubjects is the subject pattern device may answer on (its publish permission): any
// requester's reply subject that names device.
func DeviceReplySubjects(device string) string { return replyPrefix + "*.*." + device + ".*" }

// CheckRequest checks a request device received on subject with reply subject reply: the subject must
// be one of device's request subjects (logs or events) and name a requester, and reply must be exactly a
// ReplySubject of that requester for device. It returns the requester, or why the request must not be
// answered (an agent answers nothing then: the reply subject is the requester's choice, and only the one
// the contract names for it is safe to publish to).
func CheckRequest(device, subject, reply string) (Requester, error) {
	var rest string
	switch {
	case strings.HasPrefix(subject, logsPrefix+device+"."):
		rest = strings.TrimPrefix(subject, logsPrefix+device+".")
	case strings.HasPrefix(subject, eventsPrefix+device+"."):
		rest = strings.TrimPrefix(subject, eventsPrefix+device+".")
	default:
		return Requester{}, fmt.Errorf("subject %q is not a request to device %s", truncateToken(subject), device)
	}
	role, name, ok := strings.Cut(rest, ".")
	r := Requester{Role: role, Name: name}
	if !ok || r.Valid() != nil {
		return Requester{}, fmt.Errorf("subject %q names no requester", truncateToken(subject))
	}
	nonce, ok := strings.CutPrefix(reply, ReplyPrefix(r)+"."+device+".")
	if !ok || !ValidToken(nonce) {
		return r, fmt.Errorf("reply subject %q of requester %s is not %s.%s.<nonce>", truncateToken(reply), r, ReplyPrefix(r), device)
	}
	return r, nil
}

// truncateToken bounds a subject quoted in an error (it comes from the requester).
func truncateToken(s string) string {
	if len(s) > 256 {
		return s[:256] + "..."
	}
	return s
}
