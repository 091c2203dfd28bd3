package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"

	"github.com/platform-operator/platform-operator/internal/iot/fleet"
	"github.com/platform-operator/platform-operator/internal/iot/fleet/agent"
)

// runLogs prints a deployment's newest log lines on one device as the device streams them: text is the
// lines as they are, json an array of strings.
func runLogs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		o                       options
		device, namespace, name string
		lines                   int
	)
	fs := newFlagSet("logs", stderr)
	o.bind(fs)
	fs.StringVar(&device, "device", "", "The device's ID.")
	fs.StringVar(&namespace, "namespace", "", "The iot Deployment's namespace.")
	fs.StringVar(&name, "name", "", "The iot Deployment's name.")
	fs.IntVar(&lines, "lines", 0, fmt.Sprintf("How many newest lines (default and at most %d).", agent.DefaultLogLines))
	if err := o.parse(fs, args); err != nil {
		return err
	}
	if err := fleet.ValidDeviceID(device); err != nil {
		return usageError{fmt.Errorf("--device: %w", err)}
	}
	if !fleet.ValidToken(namespace) || !fleet.ValidToken(name) {
		return usagef("--namespace and --name must name an iot Deployment (got %q and %q)", namespace, name)
	}
	if lines < 0 || lines > agent.DefaultLogLines {
		return usagef("--lines must be between 1 and %d", agent.DefaultLogLines)
	}
	s, err := o.connect(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	rctx, cancel := context.WithTimeout(s.ctx, o.timeout)
	defer cancel()
	out := &jsonList{w: stdout}
	n := 0
	err = agent.RequestLogs(rctx, s.nc, device, fleet.DeploymentKey{Namespace: namespace, Name: name}, lines, func(line string) {
		n++
		if o.output == "json" {
			out.add(line)
			return
		}
		_, _ = fmt.Fprintln(stdout, line)
	})
	if err != nil {
		return deviceError(s, device, "logs", n, o, err)
	}
	if o.output == "json" {
		return out.close()
	}
	return nil
}

// deviceError says why a request to a device's agent failed: the server refused it, no agent of that
// device is connected, or it did not answer (or finish answering) in time.
func deviceError(s *session, device, what string, received int, o options, err error) error {
	if e := s.explain(err); errors.Is(e, errPermission) {
		return e
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("device %s is not connected: no agent answers %s requests for it", device, what)
	case errors.Is(err, context.DeadlineExceeded) && received == 0:
		return fmt.Errorf("device %s did not answer within %s", device, o.timeout)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("device %s did not finish its answer within %s (%d received)", device, o.timeout, received)
	}
	return fmt.Errorf("device %s: %w", device, err)
}
