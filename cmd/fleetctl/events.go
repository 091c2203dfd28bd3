package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
)

// runEvents prints a device's newest events (those of one deployment with --namespace and --name), as
// the device's agent keeps them in memory, and what the agent says of itself. The reply is bounded by
// agent.RequestEvents whatever the device sends.
func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c deviceCommand
	fs := c.flags("events", stderr,
		"Only the events of the iot Deployment in this namespace (with --name).",
		"Only the events of the iot Deployment of this name (with --namespace).")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if (c.namespace == "") != (c.name == "") || c.namespace != "" && (!fleet.ValidToken(c.namespace) || !fleet.ValidToken(c.name)) {
		return usagef("--namespace and --name name an iot Deployment together (got %q and %q)", c.namespace, c.name)
	}
	var reply *agent.EventsReply
	if err := c.ask(ctx, "events", func(ctx context.Context, nc *nats.Conn) (int, error) {
		var err error
		reply, err = agent.RequestEvents(ctx, nc, c.from, c.device, c.deployment())
		return 0, err
	}); err != nil {
		return err
	}
	if c.o.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reply)
	}
	beat := "none yet"
	if reply.LastHeartbeatAt != nil {
		beat = textTime(*reply.LastHeartbeatAt)
	}
	if _, err := fmt.Fprintf(stdout, "Device: %s\nAgent: %s\nLast heartbeat: %s\n\n", reply.Device, orDash(reply.AgentVersion), beat); err != nil {
		return err
	}
	t := newTable(stdout, "TIME", "SEVERITY", "REASON", "DEPLOYMENT", "COUNT", "MESSAGE")
	for _, e := range reply.Events {
		dep := "-"
		if e.Name != "" {
			dep = e.Namespace + "/" + e.Name
		}
		t.row(textTime(e.Time), string(e.Severity), e.Reason, dep, strconv.Itoa(e.Count), orDash(e.Message))
	}
	return t.flush()
}
