package main

import (
	"context"
	"errors"
	"flag"
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
		c     deviceCommand
		lines int
	)
	fs := c.flags("logs", stderr, "The iot Deployment's namespace.", "The iot Deployment's name.")
	fs.IntVar(&lines, "lines", 0, fmt.Sprintf("How many newest lines (default and at most %d).", agent.DefaultLogLines))
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if !fleet.ValidToken(c.namespace) || !fleet.ValidToken(c.name) {
		return usagef("--namespace and --name must name an iot Deployment (got %q and %q)", c.namespace, c.name)
	}
	if lines < 0 || lines > agent.DefaultLogLines {
		return usagef("--lines must be between 1 and %d", agent.DefaultLogLines)
	}
	out := &jsonList{w: stdout}
	if err := c.ask(ctx, "logs", func(ctx context.Context, nc *nats.Conn) (int, error) {
		n := 0
		err := agent.RequestLogs(ctx, nc, c.from, c.device, c.deployment(), lines, func(line string) {
			n++
			if c.o.output == "json" {
				out.add(line)
				return
			}
			_, _ = fmt.Fprintln(stdout, line)
		})
		return n, err
	}); err != nil {
		return err
	}
	if c.o.output == "json" {
		return out.close()
	}
	return nil
}

// deviceCommand is what the commands that ask one device's agent (logs, events) share: the connection
// options, the device and the iot Deployment they name, and how a request is sent and its failure told.
type deviceCommand struct {
	o                       options
	device, namespace, name string
	// from is who the credentials name in a request: the only requester the server lets them be.
	from fleet.Requester
}

// flags is the command's flag set: the connection options, --device, and --namespace and --name with
// the command's help.
func (c *deviceCommand) flags(cmd string, stderr io.Writer, namespaceHelp, nameHelp string) *flag.FlagSet {
	fs := newFlagSet(cmd, stderr)
	c.o.bind(fs)
	fs.StringVar(&c.device, "device", "", "The device's ID.")
	fs.StringVar(&c.namespace, "namespace", "", namespaceHelp)
	fs.StringVar(&c.name, "name", "", nameHelp)
	return fs
}

// parse parses args and checks the device's ID; the command checks --namespace and --name, which it
// requires or not.
func (c *deviceCommand) parse(fs *flag.FlagSet, args []string) error {
	if err := c.o.parse(fs, args); err != nil {
		return err
	}
	if err := fleet.ValidDeviceID(c.device); err != nil {
		return usageError{fmt.Errorf("--device: %w", err)}
	}
	return nil
}

func (c *deviceCommand) deployment() fleet.DeploymentKey {
	return fleet.DeploymentKey{Namespace: c.namespace, Name: c.name}
}

// ask connects and runs req under --timeout; a failure is told by deviceError, with what req says it
// received before it.
func (c *deviceCommand) ask(ctx context.Context, what string, req func(ctx context.Context, nc *nats.Conn) (received int, err error)) error {
	s, err := c.o.connect(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	if c.from, err = c.o.client().Requester(); err != nil {
		return usageError{err}
	}
	rctx, cancel := context.WithTimeout(s.ctx, c.o.timeout)
	defer cancel()
	if n, err := req(rctx, s.nc); err != nil {
		return deviceError(s, c.device, what, n, c.o, err)
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
