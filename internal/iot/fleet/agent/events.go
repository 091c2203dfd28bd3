package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
)

// DefaultEventsTimeout is how long RequestEvents waits for a device that does not answer, when its
// context sets no deadline.
const DefaultEventsTimeout = 10 * time.Second

// EventRingSize is how many of its newest events an agent keeps (in memory only) and serves.
const EventRingSize = 32

// Bounds of an event's text, on the device and again in RequestEvents (what a device sends is bounded
// before anyone shows it).
const (
	maxReason  = 64
	maxMessage = 1024
)

// Severity of an agent event.
type Severity string

// The severities.
const (
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// Event is one thing the agent did or saw.
type Event struct {
	Time     time.Time `json:"time"`
	Severity Severity  `json:"severity"`
	// Reason is one of the Reason constants.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Namespace and Name are the deployment's (empty for an event of the device).
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// Count is how many times in a row the event happened; Time is the last.
	Count int `json:"count"`
}

// EventsRequest asks a device for its newest events, all of them or one deployment's.
type EventsRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// EventsReply is a device's answer: its events, oldest first, and what the agent knows of itself.
type EventsReply struct {
	Device       string `json:"device"`
	AgentVersion string `json:"agentVersion"`
	// LastHeartbeatAt is the time of the agent's last heartbeat written successfully (nil: none yet).
	LastHeartbeatAt *time.Time `json:"lastHeartbeatAt,omitempty"`
	Events          []Event    `json:"events"`
	// Error says why the request could not be answered.
	Error string `json:"error,omitempty"`
}

// ring keeps the newest EventRingSize events.
type ring struct {
	mu     sync.Mutex
	events []Event
	beat   time.Time
}

// add records an event, folding it into the newest one of the same deployment when it repeats it.
func (r *ring) add(e Event) {
	e.Reason, e.Message = truncate(e.Reason, maxReason), truncate(e.Message, maxMessage)
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		p := &r.events[i]
		if p.Namespace != e.Namespace || p.Name != e.Name {
			continue
		}
		if p.Reason == e.Reason && p.Message == e.Message && p.Severity == e.Severity {
			p.Count++
			p.Time = e.Time
			// Move it to the end: the ring stays ordered by time.
			ev := *p
			r.events = append(append(r.events[:i:i], r.events[i+1:]...), ev)
			return
		}
		break
	}
	e.Count = 1
	r.events = append(r.events, e)
	if over := len(r.events) - EventRingSize; over > 0 {
		r.events = append(r.events[:0:0], r.events[over:]...)
	}
}

func (r *ring) heartbeat(at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beat = at
}

func (r *ring) snapshot(d fleet.DeploymentKey) ([]Event, *time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.events))
	for _, e := range r.events {
		if d.Name == "" || (e.Namespace == d.Namespace && e.Name == d.Name) {
			out = append(out, e)
		}
	}
	if r.beat.IsZero() {
		return out, nil
	}
	b := r.beat
	return out, &b
}

// Events are the agent's newest events (all deployments when d is zero), oldest first, and the time of
// its last successful heartbeat (nil before the first).
func (a *Agent) Events(d fleet.DeploymentKey) ([]Event, *time.Time) { return a.events.snapshot(d) }

func (a *Agent) record(d fleet.DeploymentKey, sev Severity, reason, msg string) {
	a.events.add(Event{Severity: sev, Reason: reason, Message: msg, Namespace: d.Namespace, Name: d.Name})
}

// serveEvents answers event requests for this device until ctx ends.
func (a *Agent) serveEvents(nc *nats.Conn) (*nats.Subscription, error) {
	return nc.Subscribe(fleet.EventsServeSubject(a.Device.ID), func(m *nats.Msg) {
		if !a.acceptRequest(m) {
			return
		}
		reply := EventsReply{Device: a.Device.ID, AgentVersion: Version}
		var req EventsRequest
		switch err := json.Unmarshal(m.Data, &req); {
		case len(m.Data) > 0 && err != nil,
			req.Namespace != "" && !fleet.ValidToken(req.Namespace),
			req.Name != "" && !fleet.ValidToken(req.Name),
			(req.Namespace == "") != (req.Name == ""):
			reply.Error = "an events request is {} or {namespace, name}"
		default:
			reply.Events, reply.LastHeartbeatAt = a.Events(fleet.DeploymentKey{Namespace: req.Namespace, Name: req.Name})
		}
		_ = m.Respond(fleet.Encode(reply))
	})
}

// RequestEvents asks device, as requester from (see RequestLogs), for its newest events (those of
// deployment d, or all when d is zero) and the agent's information. The reply is bounded as the device bounds it: at most EventRingSize events,
// each reason and message cut to their limits, whatever the device sent. It waits at most
// DefaultEventsTimeout for the reply when ctx has no deadline.
func RequestEvents(ctx context.Context, nc *nats.Conn, from fleet.Requester, device string, d fleet.DeploymentKey) (*EventsReply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultEventsTimeout)
		defer cancel()
	}
	sub, err := subscribeReply(nc, from, device)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(EventsRequest{Namespace: d.Namespace, Name: d.Name})
	if err := nc.PublishRequest(fleet.EventsSubject(device, from), sub.Subject, req); err != nil {
		return nil, fmt.Errorf("events of %s: %w", device, err)
	}
	m, err := nextReply(ctx, sub)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", device, err)
	}
	var r EventsReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nil, fmt.Errorf("events of %s: unreadable reply: %w", device, err)
	}
	if r.Error != "" {
		return nil, errors.New(truncate(r.Error, maxMessage))
	}
	if r.Device != device {
		return nil, fmt.Errorf("events of %s: the reply names device %q", device, truncate(r.Device, 128))
	}
	r.AgentVersion = truncate(r.AgentVersion, maxReason)
	if over := len(r.Events) - EventRingSize; over > 0 {
		r.Events = r.Events[over:]
	}
	for i := range r.Events {
		e := &r.Events[i]
		e.Reason, e.Message = truncate(e.Reason, maxReason), truncate(e.Message, maxMessage)
		e.Namespace, e.Name = truncate(e.Namespace, 128), truncate(e.Name, 128)
		switch e.Severity {
		case SeverityInfo, SeverityWarning, SeverityError:
		default:
			e.Severity = SeverityWarning
		}
	}
	return &r, nil
}
