package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// Defaults of OperatorOptions.
const (
	DefaultOperatorReadyTimeout = 60 * time.Second
	DefaultOperatorStopTimeout  = 15 * time.Second
)

// OperatorEnvDrop names what StartOperator takes out of the inherited environment: the variables the
// operator reads its configuration from, so that the shell the tests run in cannot change what they test.
// A name ending in "*" is a prefix.
var OperatorEnvDrop = []string{"KUBECONFIG", "WATCH_NAMESPACE", "POD_NAMESPACE", "RELATED_IMAGE_*"}

// ErrSecureMetrics is what Scrape returns for an operator started with SecureMetrics: its /metrics wants
// a token the API server authorizes.
var ErrSecureMetrics = errors.New("metrics are served over HTTPS with authentication (SecureMetrics); Scrape reads plain HTTP only")

// OperatorOptions say how to run one platform-operator process.
type OperatorOptions struct {
	// Binary is the operator executable (bin/platform-operator from `make build`).
	Binary string
	// Kubeconfig is the cluster's kubeconfig: StartOperator's own requests use it (installing
	// WebhookManifests, which OLM does with its own rights), and the process gets it as --kubeconfig unless
	// ProcessKubeconfig is set.
	Kubeconfig string
	// ProcessKubeconfig, when set, is the process's --kubeconfig instead of Kubeconfig: the identity the
	// operator runs as, such as its CSV's ServiceAccount (InstallCSVRBAC), so that it has exactly the
	// permissions the bundle grants while StartOperator still installs what OLM would.
	ProcessKubeconfig string
	// Name tells processes apart: the Child is "operator <Name>", its log <LogDir>/operator-<Name>.log.
	Name string
	// LogPath is the file the process's output goes to, headed by its command line. Default:
	// <LogDir>/operator-<Name>.log when LogDir is set.
	LogPath string
	// LogDir holds the log file when LogPath is empty; it is created if need be.
	LogDir string
	// Output receives the process's output when there is no log file (neither LogPath nor LogDir);
	// nil discards it. It is not closed.
	Output io.Writer
	// Args are more flags, appended after StartOperator's own (the operator's flag parsing lets a later
	// flag win).
	Args []string
	// Env is added to the inherited environment, which is first stripped of OperatorEnvDrop and of the
	// names Env sets: WATCH_NAMESPACE=..., RELATED_IMAGE_ERGO=...
	Env []string
	// Pprof also serves Go's /debug/pprof (--pprof-bind-address) on a free 127.0.0.1 port.
	Pprof bool
	// SecureMetrics leaves /metrics as the operator serves it by default: HTTPS, authenticated and
	// authorized through the API server, as a Deployment runs it. Scrape then fails with ErrSecureMetrics.
	// Default: plain HTTP (--metrics-secure=false), so that Scrape can read it.
	SecureMetrics bool
	// LeaderElection turns --leader-elect on; nil runs with --leader-elect=false.
	LeaderElection *LeaderElection
	// ReadyTimeout bounds the wait for /readyz and the metrics and pprof listeners (see StartOperator).
	// Default: DefaultOperatorReadyTimeout.
	ReadyTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL. Default: DefaultOperatorStopTimeout.
	StopTimeout time.Duration
	// WebhookManifests, when set, is a file of webhook configurations (config/webhook/manifests.yaml)
	// that StartOperator installs once the process is ready, rewritten to call its webhook server and
	// scoped to its WATCH_NAMESPACE (LocalWebhookConfigurations), and Stop deletes. Without it the
	// process still serves its webhooks (every process gets a certificate and a port, as a pod does), but
	// the API server does not call them.
	WebhookManifests string
	// NoWebhookFlags gives the process no webhook port, host or certificate: for a binary from before the
	// operator served webhooks (test/olm's previous release), whose flag parsing would refuse them. It
	// cannot go with WebhookManifests.
	NoWebhookFlags bool
}

// LeaderElection is the operator's leader election: a zero duration leaves the operator's default.
type LeaderElection struct {
	// Namespace holds the Lease (--leader-election-namespace). A pod reads it from its service account
	// mount; a process outside the cluster needs it.
	Namespace string
	// LeaseDuration, RenewDeadline and RetryPeriod are --leader-elect-lease-duration,
	// --leader-elect-renew-deadline and --leader-elect-retry-period.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Operator is one running platform-operator process, its endpoints on 127.0.0.1 (its webhook server's
// too: WebhookAddr).
type Operator struct {
	*Child
	// Name is OperatorOptions.Name.
	Name string
	// Args is the whole command line after the binary.
	Args []string
	// ProbeAddr serves /healthz and /readyz, MetricsAddr /metrics, PprofAddr /debug/pprof (empty
	// without OperatorOptions.Pprof); all host:port.
	ProbeAddr, MetricsAddr, PprofAddr string
	// LogPath is the log file, empty when the output went to OperatorOptions.Output.
	LogPath string
	// StartedAt is when the process was started, ReadyAfter how long it then took to answer /readyz.
	StartedAt  time.Time
	ReadyAfter time.Duration

	secureMetrics bool
	stopTimeout   time.Duration

	operatorWebhooks
}

// StartOperator starts the operator with its probe, metrics and webhook endpoints (and pprof's) on free
// 127.0.0.1 ports, the webhook server with a certificate of its own (WebhookCerts), and waits until
// /readyz answers 200 and the metrics (and pprof) ports accept connections; with WebhookManifests it then
// installs the webhook configurations that call this process and waits until the API server does. When
// the operator exits first or is not ready in time, it stops the process and says where its log is, with
// the log's last lines.
//
// The manager's /readyz covers its webhook server (main.go adds the server's StartedChecker), but not the
// metrics server, which controller-runtime starts beside the probe server and which opens its port a
// moment later (after making its certificate): a caller that scrapes right after StartOperator returns
// must not race with it. A caller that turns metrics off with --metrics-bind-address=0 in Args would make
// that wait time out.
func StartOperator(ctx context.Context, o OperatorOptions) (*Operator, error) {
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = DefaultOperatorReadyTimeout
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultOperatorStopTimeout
	}
	n := 2
	if o.Pprof {
		n = 3
	}
	ports, err := testutil.FreePorts(n + 1) // the last one serves the webhooks
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) }
	op := &Operator{
		Name:          o.Name,
		ProbeAddr:     addr(0),
		MetricsAddr:   addr(1),
		LogPath:       o.LogPath,
		secureMetrics: o.SecureMetrics,
		stopTimeout:   o.StopTimeout,
	}
	if o.Pprof {
		op.PprofAddr = addr(2)
	}
	if op.LogPath == "" && o.LogDir != "" {
		op.LogPath = filepath.Join(o.LogDir, "operator-"+cmp.Or(o.Name, "operator")+".log")
	}
	var webhookArgs []string
	if o.NoWebhookFlags {
		if o.WebhookManifests != "" {
			return nil, errors.New("OperatorOptions: WebhookManifests needs the webhook flags NoWebhookFlags leaves out")
		}
	} else if webhookArgs, err = op.prepareWebhooks(addr(n)); err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			_ = op.removeWebhookCerts()
		}
	}()
	o.Args = append(webhookArgs, o.Args...)
	op.Args = operatorArgs(o, op.ProbeAddr, op.MetricsAddr, op.PprofAddr)

	var out io.WriteCloser
	if op.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(op.LogPath), 0o755); err != nil {
			return nil, err
		}
		f, err := CreateLog(op.LogPath, o.Binary, op.Args)
		if err != nil {
			return nil, err
		}
		if len(o.Env) > 0 {
			fmt.Fprintf(f, "# env: %s\n", strings.Join(o.Env, " "))
		}
		out = f
	} else if o.Output != nil {
		out = nopCloser{o.Output}
	}

	name := "operator"
	if o.Name != "" {
		name += " " + o.Name
	}
	op.StartedAt = time.Now()
	if op.Child, err = StartChild(name, o.Binary, op.Args, operatorEnv(os.Environ(), o.Env), out); err != nil {
		return nil, err
	}
	if err := op.WaitReady(ctx, o.ReadyTimeout, operatorReady(op)); err != nil {
		stopErr := op.Stop()
		if op.LogPath != "" {
			err = fmt.Errorf("%w\nlog %s ends with:\n%s", err, op.LogPath, op.Tail(20))
		}
		return nil, errors.Join(err, stopErr)
	}
	op.ReadyAfter = time.Since(op.StartedAt)
	if o.WebhookManifests != "" {
		if err := op.installWebhooks(ctx, o); err != nil {
			return nil, errors.Join(err, op.Stop())
		}
	}
	started = true
	return op, nil
}

// operatorReady passes once /readyz answers 200 and then every other port of the process accepts
// connections: what StartOperator promises its caller can talk to.
func operatorReady(op *Operator) func(context.Context) error {
	readyz := HealthCheck("http://" + op.ProbeAddr + "/readyz")
	return func(ctx context.Context) error {
		if err := readyz(ctx); err != nil {
			return err
		}
		listeners := []struct{ name, addr string }{{"metrics", op.MetricsAddr}, {"pprof", op.PprofAddr}}
		for _, l := range listeners {
			if l.addr == "" {
				continue
			}
			var d net.Dialer
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			conn, err := d.DialContext(dctx, "tcp", l.addr)
			cancel()
			if err != nil {
				return fmt.Errorf("ready, but its %s port does not accept connections yet: %w", l.name, err)
			}
			_ = conn.Close()
		}
		return nil
	}
}

// operatorArgs is the operator's command line: StartOperator's flags, then o.Args.
func operatorArgs(o OperatorOptions, probeAddr, metricsAddr, pprofAddr string) []string {
	args := []string{
		"--kubeconfig=" + cmp.Or(o.ProcessKubeconfig, o.Kubeconfig),
		"--health-probe-bind-address=" + probeAddr,
		"--metrics-bind-address=" + metricsAddr,
	}
	if !o.SecureMetrics {
		args = append(args, "--metrics-secure=false")
	}
	if pprofAddr != "" {
		args = append(args, "--pprof-bind-address="+pprofAddr)
	}
	if le := o.LeaderElection; le != nil {
		args = append(args, "--leader-elect=true")
		if le.Namespace != "" {
			args = append(args, "--leader-election-namespace="+le.Namespace)
		}
		for _, d := range []struct {
			flag string
			d    time.Duration
		}{
			{"--leader-elect-lease-duration", le.LeaseDuration},
			{"--leader-elect-renew-deadline", le.RenewDeadline},
			{"--leader-elect-retry-period", le.RetryPeriod},
		} {
			if d.d != 0 {
				args = append(args, d.flag+"="+d.d.String())
			}
		}
	} else {
		args = append(args, "--leader-elect=false")
	}
	return append(args, o.Args...)
}

// operatorEnv is inherited without OperatorEnvDrop and without what extra sets, then extra.
func operatorEnv(inherited, extra []string) []string {
	drop := slices.Clone(OperatorEnvDrop)
	for _, e := range extra {
		name, _, _ := strings.Cut(e, "=")
		drop = append(drop, name)
	}
	return append(FilterEnv(inherited, drop...), extra...)
}

// FilterEnv returns env (NAME=value entries, such as os.Environ()) without the variables drop names; a
// name ending in "*" drops every variable it is a prefix of. env is not changed.
func FilterEnv(env []string, drop ...string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if !slices.ContainsFunc(drop, func(d string) bool {
			if prefix, ok := strings.CutSuffix(d, "*"); ok {
				return strings.HasPrefix(name, prefix)
			}
			return name == d
		}) {
			out = append(out, e)
		}
	}
	return out
}

// CreateLog creates the log file of a process, its first line "# <binary> <args>" so that a reader can
// run the same command.
func CreateLog(path, binary string, args []string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(f, "# %s %s\n", binary, strings.Join(args, " ")); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// Stop deletes the webhook configurations installed for the process, sends SIGTERM, waits up to
// OperatorOptions.StopTimeout, then kills (see Child.Stop), and removes the webhook certificate.
func (o *Operator) Stop() error {
	return errors.Join(o.stopWebhooks(), o.Child.Stop(o.stopTimeout), o.removeWebhookCerts())
}

// Addresses are the host:port addresses the operator listens on.
func (o *Operator) Addresses() []string {
	addrs := []string{o.ProbeAddr, o.MetricsAddr}
	if o.PprofAddr != "" {
		addrs = append(addrs, o.PprofAddr)
	}
	if o.WebhookAddr != "" {
		addrs = append(addrs, o.WebhookAddr)
	}
	return addrs
}

// CheckStopped proves, after Stop or Kill, that the process has exited and none of its addresses
// accepts connections.
func (o *Operator) CheckStopped() error {
	select {
	case <-o.Done():
	default:
		return fmt.Errorf("%s (pid %d) is still running", o.name, o.PID())
	}
	if err := CheckClosed(o.Addresses()...); err != nil {
		return fmt.Errorf("%s: %w", o.name, err)
	}
	return nil
}

// Tail is the last n lines of the log file; empty without one.
func (o *Operator) Tail(n int) string {
	if o.LogPath == "" {
		return ""
	}
	return TailFile(o.LogPath, n)
}

// metricsClient reads the operator's plain-HTTP endpoints on 127.0.0.1, never through a proxy.
var metricsClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

// Scrape reads the operator's /metrics.
func (o *Operator) Scrape(ctx context.Context) (Metrics, error) {
	if o.secureMetrics {
		return nil, ErrSecureMetrics
	}
	url := "http://" + o.MetricsAddr + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	m, err := ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return m, nil
}

// TailFile returns the last n lines of the file at path, or what went wrong reading it. It reads from the
// end, so a long log costs no more than its tail.
func TailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	const block = 64 << 10
	var buf []byte
	for end := fi.Size(); end > 0; {
		start := max(0, end-block)
		chunk := make([]byte, end-start)
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return err.Error()
		}
		buf = append(chunk, buf...)
		end = start
		// n lines need n line breaks before them, plus the one the file ends with.
		if strings.Count(string(buf), "\n") > n {
			break
		}
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
