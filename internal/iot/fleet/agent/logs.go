package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// DefaultLogLines is how many of a deployment's newest log lines a device serves when a request names no
// number, and the most it serves.
const DefaultLogLines = 10000

// LogReader is a Runtime that can read its containers' logs. The podman runtime reads podman's own log
// store, which keeps the lines on the device; the agent keeps nothing itself.
type LogReader interface {
	// Logs calls line with the newest tail lines of the deployment's containers, oldest first, until it
	// returns an error.
	Logs(ctx context.Context, d fleet.DeploymentKey, tail int, line func(string) error) error
}

// LogRequest asks a device for a deployment's newest log lines, on subject fleet.LogsSubject(device,
// requester), answered on fleet.ReplySubject(requester, device, nonce) only.
type LogRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Lines is how many newest lines to send, at most DefaultLogLines (also the default).
	Lines int `json:"lines,omitempty"`
}

// Headers of the log reply stream: the last message carries HeaderEnd (and HeaderError when the lines
// could not be read); every other message is a chunk of lines, newline-separated.
const (
	HeaderEnd   = "Fleet-Logs-End"
	HeaderError = "Fleet-Logs-Error"
)

// maxChunk is the most bytes of lines sent in one reply message (NATS' default max payload is 1 MB).
const maxChunk = 64 * 1024

// serveLogs answers log requests for this device until ctx ends.
func (a *Agent) serveLogs(ctx context.Context, nc *nats.Conn) (*nats.Subscription, error) {
	lr, ok := a.Runtime.(LogReader)
	if !ok {
		return nil, nil
	}
	return nc.Subscribe(fleet.LogsServeSubject(a.Device.ID), func(m *nats.Msg) {
		if !a.acceptRequest(m) {
			return
		}
		go a.answerLogs(ctx, nc, lr, m)
	})
}

func (a *Agent) answerLogs(ctx context.Context, nc *nats.Conn, lr LogReader, m *nats.Msg) {
	end := nats.NewMsg(m.Reply)
	end.Header.Set(HeaderEnd, "true")
	defer func() { _ = nc.PublishMsg(end) }()
	var req LogRequest
	if err := json.Unmarshal(m.Data, &req); err != nil || !fleet.ValidToken(req.Namespace) || !fleet.ValidToken(req.Name) {
		end.Header.Set(HeaderError, "a log request is {namespace, name, lines}")
		return
	}
	n := req.Lines
	if n <= 0 || n > DefaultLogLines {
		n = DefaultLogLines
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var chunk strings.Builder
	flush := func() error {
		if chunk.Len() == 0 {
			return nil
		}
		err := nc.Publish(m.Reply, []byte(chunk.String()))
		chunk.Reset()
		return err
	}
	err := lr.Logs(ctx, fleet.DeploymentKey{Namespace: req.Namespace, Name: req.Name}, n, func(line string) error {
		if chunk.Len()+len(line)+1 > maxChunk {
			if err := flush(); err != nil {
				return err
			}
		}
		chunk.WriteString(line)
		chunk.WriteByte('\n')
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		end.Header.Set(HeaderError, truncate(err.Error(), 512))
	}
}

// RequestLogs asks device, as requester from (the role and name of nc's credentials: the server lets a
// requester name only itself), for deployment d's newest lines (0: DefaultLogLines) and calls line with
// each as it arrives, until the device says it is done. Nothing is stored on the way.
func RequestLogs(ctx context.Context, nc *nats.Conn, from fleet.Requester, device string, d fleet.DeploymentKey, lines int, line func(string)) error {
	sub, err := subscribeReply(nc, from, device)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(LogRequest{Namespace: d.Namespace, Name: d.Name, Lines: lines})
	if err := nc.PublishRequest(fleet.LogsSubject(device, from), sub.Subject, req); err != nil {
		return err
	}
	for {
		m, err := nextReply(ctx, sub)
		if err != nil {
			return fmt.Errorf("logs of %s: %w", device, err)
		}
		if m.Header.Get(HeaderEnd) != "" {
			if e := m.Header.Get(HeaderError); e != "" {
				return errors.New(e)
			}
			return nil
		}
		sc := bufio.NewScanner(strings.NewReader(string(m.Data)))
		sc.Buffer(make([]byte, 0, 64*1024), maxChunk+1)
		for sc.Scan() {
			line(sc.Text())
		}
	}
}

// subscribeReply subscribes to a new reply subject of requester from for device's answer.
func subscribeReply(nc *nats.Conn, from fleet.Requester, device string) (*nats.Subscription, error) {
	if err := from.Valid(); err != nil {
		return nil, err
	}
	if err := fleet.ValidDeviceID(device); err != nil {
		return nil, err
	}
	// A fresh unique token: nats.NewInbox is "_INBOX." and a NUID.
	nonce := strings.TrimPrefix(nats.NewInbox(), nats.InboxPrefix)
	return nc.SubscribeSync(fleet.ReplySubject(from, device, nonce))
}

// acceptRequest says whether the agent answers request m: only when its reply subject is exactly the
// one the contract names for the requester its subject names (fleet.CheckRequest). Anything else is
// refused, logged, counted (RefusedRequests) and recorded as an event: answering it would publish with
// the device's rights to a subject the requester chose.
func (a *Agent) acceptRequest(m *nats.Msg) bool {
	r, err := fleet.CheckRequest(a.Device.ID, m.Subject, m.Reply)
	if err == nil {
		return true
	}
	a.refused.Add(1)
	a.Log.Info("refused a request", "subject", truncate(m.Subject, 256), "requester", r.String(), "reason", err.Error())
	// One wording, so that repeated refusals fold into one event (with its count) instead of pushing the
	// deployments' events out of the ring.
	a.record(fleet.DeploymentKey{}, SeverityWarning, ReasonRequestRefused, "a log or events request whose reply subject is not its requester's was not answered (the agent's log has the subjects)")
	return false
}

// RefusedRequests is how many log and events requests the agent refused to answer since it started
// (acceptRequest).
func (a *Agent) RefusedRequests() uint64 { return a.refused.Load() }

// nextReply is the next message of a reply subscription; the server's "no responders" status (nothing
// subscribes to the request's subject: no agent of that device is connected) is nats.ErrNoResponders.
func nextReply(ctx context.Context, sub *nats.Subscription) (*nats.Msg, error) {
	m, err := sub.NextMsgWithContext(ctx)
	if err == nil && len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, nats.ErrNoResponders
	}
	return m, err
}
