package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
)

// runEvents prints a device's newest events (those of one deployment with --namespace and --name), as
// the device's agent keeps them in memory, and what the agent says of itself. The reply is bounded by
// agent.RequestEvents whatever the device sends.
func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		o                       options
		device, namespace, name string
	)
	fs := newFlagSet("events", stderr)
	o.bind(fs)
	fs.StringVar(&device, "device", "", "The device's ID.")
	fs.StringVar(&namespace, "namespace", "", "Only the events of the iot Deployment in this namespace (with --name).")
	fs.StringVar(&name, "name", "", "Only the events of the iot Deployment of this name (with --namespace).")
	if err := o.parse(fs, args); err != nil {
		return err
	}
	if err := fleet.ValidDeviceID(device); err != nil {
		return usageError{fmt.Errorf("--device: %w", err)}
	}
	d := fleet.DeploymentKey{Namespace: namespace, Name: name}
	if (namespace == "") != (name == "") || namespace != "" && (!fleet.ValidToken(namespace) || !fleet.ValidToken(name)) {
		return usagef("--namespace and --name name an iot Deployment together (got %q and %q)", namespace, name)
	}
	s, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	rctx, cancel := context.WithTimeout(s.ctx, o.timeout)
	defer cancel()
	reply, err := agent.RequestEvents(rctx, s.nc, device, d)
	if err != nil {
		return deviceError(s, device, "events", 0, o, err)
	}
	if o.output == "json" {
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
