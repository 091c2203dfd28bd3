// Command fleetctl is the IoT fleet's command line for people: it fetches a device's log lines and
// events over NATS request/reply and lists a Deployment's per-device states from the fleet's JetStream
// buckets, reading only, with what its NATS credentials allow; and it applies, deletes and reads iot
// Deployments on the Kubernetes API server with server-side apply as its own field manager (docs/iot.md,
// "fleetctl").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platform-operator/platform-operator/internal/iot/fleet/auth"
)

// Exit codes: a usage mistake is told apart from a failure to read the fleet.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `fleetctl reads the IoT fleet through its NATS server, and applies iot Deployments.

Kubernetes commands (--kubeconfig, --context, --namespace, --timeout):
  apply   --name X --image I (--target-device D | --selector k=v,... | --all-devices) [--port H:C]...
          [--env K=V]... [--service S] [--restart P] [--print [-o yaml|json]] [--delete]
                                                           server-side apply (field manager "fleetctl")
  delete  --name X [--ignore-not-found]                    delete a Deployment
  get     [--name X | -A] [-o text|yaml|json]              Deployments and their status

NATS commands:
  logs    --device D --namespace N --name X [--lines N]   a deployment's newest log lines on one device
  events  --device D [--namespace N --name X]             a device's recent events (of one deployment)
  states  --namespace N --deployment X [--selector k=v,...] [--state failed]
                                                           each device's state for a deployment

Every NATS command takes --nats-url, --creds, --nats-ca-file, --timeout and -o text|json.
Run "fleetctl <command> -h" for a command's flags.
`

// run is the whole command: the tests call it as main does, against a real NATS server.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var cmd func(context.Context, []string, io.Writer, io.Writer) error
	switch args[0] {
	case "logs":
		cmd = runLogs
	case "events":
		cmd = runEvents
	case "states":
		cmd = runStates
	case "apply":
		cmd = runApply
	case "delete":
		cmd = runDelete
	case "get":
		cmd = runGet
	case "help", "-h", "-help", "--help":
		_, _ = fmt.Fprint(stdout, usage)
		return exitOK
	default:
		_, _ = fmt.Fprintf(stderr, "fleetctl: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	err := cmd(ctx, args[1:], stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		_, _ = fmt.Fprintf(stderr, "fleetctl %s: %v\n", args[0], err)
		return exitUsage
	default:
		_, _ = fmt.Fprintf(stderr, "fleetctl %s: %v\n", args[0], err)
		return exitError
	}
}

// usageError is a mistake in the command line: exit code 2.
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// options are the flags every command has.
type options struct {
	natsURL, creds, caFile string
	timeout                time.Duration
	output                 string
}

func (o *options) bind(fs *flag.FlagSet) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	fs.StringVar(&o.natsURL, "nats-url", url, "URL of the fleet's NATS server; $NATS_URL when set.")
	fs.StringVar(&o.creds, "creds", "", "NATS .creds file (user JWT and nkey seed), e.g. a viewer's from fleet-auth; NATS_USER and NATS_PASSWORD in the environment authenticate with a user and password instead.")
	fs.StringVar(&o.creds, "nats-credentials-file", "", "Same as --creds (the operator's and the agent's name for it).")
	fs.StringVar(&o.caFile, "nats-ca-file", "", "PEM file of the CA that signed the NATS server's certificate (for a tls:// URL with a private CA).")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "How long to wait for each answer of the server and, for logs and events, for the device's whole answer (states has no overall deadline: it fails when the server is silent this long).")
	fs.StringVar(&o.output, "o", "text", "Output: text (aligned columns) or json.")
	fs.StringVar(&o.output, "output", "text", "Same as -o.")
}

// parse reads a command's flags; positional arguments are a usage error.
func (o *options) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.output != "text" && o.output != "json" {
		return usagef("-o must be text or json, not %q", o.output)
	}
	return nil
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fleetctl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// session is one connection to the fleet's NATS server. Its context ends, with the server's error as
// its cause, when the server refuses a publish or a subscription: NATS reports those asynchronously, and
// the request that needed them would otherwise only time out.
type session struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// errPermission is the server refusing an operation to these credentials.
var errPermission = errors.New("permission denied by the NATS server")

func (o *options) connect(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	s := &session{ctx: ctx, cancel: cancel}
	opts := []nats.Option{
		nats.Name("fleetctl"), nats.Timeout(o.timeout), nats.NoReconnect(),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				cancel(fmt.Errorf("%w: %v", errPermission, err))
			}
		}),
	}
	// The credentials' role and name choose the inbox prefix their permissions let us subscribe to.
	client := o.client()
	if _, err := client.Options(); err != nil {
		cancel(nil)
		return nil, usageError{err}
	}
	nc, js, err := client.Dial(o.natsURL, opts...)
	if err != nil {
		cancel(nil)
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			return nil, fmt.Errorf("the NATS server at %s refused these credentials: %w", o.natsURL, err)
		}
		return nil, fmt.Errorf("connect to %s: %w", o.natsURL, err)
	}
	s.nc, s.js = nc, js
	return s, nil
}

// client is how the command authenticates: the flags, NATS_USER and NATS_PASSWORD.
func (o *options) client() auth.Client {
	return auth.Client{CredentialsFile: o.creds, CAFile: o.caFile, User: os.Getenv("NATS_USER"), Password: os.Getenv("NATS_PASSWORD")}
}

func (s *session) close() {
	s.nc.Close()
	s.cancel(nil)
}

// explain says why an operation failed, preferring what the server said (a refused permission) over
// the timeout or cancellation it caused.
func (s *session) explain(err error) error {
	if cause := context.Cause(s.ctx); cause != nil && errors.Is(cause, errPermission) {
		return cause
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 403 {
		return fmt.Errorf("%w: %v", errPermission, err)
	}
	return err
}
