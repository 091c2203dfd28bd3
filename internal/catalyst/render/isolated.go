package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A render runs in a child process of the operator's own binary, which is killed when the render
// overruns its time, its output's byte limit or its memory. Neither Helm's template engine nor
// kustomize can be interrupted (a template's range over a huge number checks no context), so a render
// run in the operator's process could only be abandoned, and would go on using a CPU and memory until
// it ended, if ever; a child process really stops, and its memory is its own (RLIMIT_DATA), so a render
// cannot take the operator's memory limit, whose overrun would kill the whole container.

// ChildEnv is set, to "1", in the environment of a render's child process: MaybeChild then renders
// instead of running the operator.
const ChildEnv = "PLATFORM_OPERATOR_RENDER_CHILD"

// Defaults of Limits. A Helm render holds some 25 to 40 bytes for each byte it outputs (templates,
// YAML, the post-renderer, JSON): 320 MiB of memory render an 8 MiB output (measured: 9 MB of output
// renders in 320 MiB, not in 256; 17 MB needs more than 384). docs/catalyst.md, Budgets.
const (
	DefaultMaxBytes    = 8 << 20
	DefaultMemoryBytes = 320 << 20
	DefaultTimeout     = 2 * time.Minute
	// maxStderr bounds what is kept of the child's error output.
	maxStderr = 4 << 10
)

// ErrTooLarge is a render whose output exceeds Limits.MaxBytes.
var ErrTooLarge = errors.New("render output too large")

// ErrTimedOut is a render that did not end within Limits.Timeout; its process was killed.
var ErrTimedOut = errors.New("render timed out")

// ErrOutOfMemory is a render that needed more memory than Limits.MemoryBytes; its process ended.
var ErrOutOfMemory = errors.New("render out of memory")

// Type is what a render renders.
type Type string

// The render types: a Helm chart, a kustomization, a directory of manifests.
const (
	TypeHelm      Type = "helm"
	TypeKustomize Type = "kustomize"
	TypeManifests Type = "manifests"
)

// Limits bound one isolated render.
type Limits struct {
	// MaxBytes bounds the render's output (the objects as JSON); DefaultMaxBytes when zero.
	MaxBytes int64
	// MemoryBytes bounds the child process's data (RLIMIT_DATA); DefaultMemoryBytes when zero.
	MemoryBytes int64
	// Timeout bounds the render; DefaultTimeout when zero.
	Timeout time.Duration
	// Executable is the binary run as the child; the running one (os.Executable) when empty. It must
	// call MaybeChild first thing (main.go does; a test package does in an init function).
	Executable string
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	return l
}

// childRequest is what the parent sends on the child's standard input.
type childRequest struct {
	Type        Type
	Dir         string
	Input       Input
	MemoryBytes int64
	// Helm, when set, is a Helm action to run instead of a render.
	Helm *HelmRequest `json:",omitempty"`
}

// childResult is what the child writes on its standard output.
type childResult struct {
	Error   string            `json:",omitempty"`
	Objects []json.RawMessage `json:",omitempty"`
}

// Rendered is an isolated render's result: the objects, and for a Helm chart the chart, loaded in the
// operator's process (loading runs no template) for Helm's install.
type Rendered struct {
	Objects []*unstructured.Unstructured
	Chart   *chart.Chart
}

// Isolated renders the checkout at dir in a child process bounded by limits (see the package's
// comment). ctx's end kills the child too.
func Isolated(ctx context.Context, limits Limits, typ Type, dir string, in Input) (*Rendered, error) {
	limits = limits.withDefaults()
	req, err := json.Marshal(childRequest{Type: typ, Dir: dir, Input: in, MemoryBytes: limits.MemoryBytes})
	if err != nil {
		return nil, err
	}
	out, err := runChild(ctx, limits, limits.Timeout, req, limits.MaxBytes, childMessages{
		timeout:     "rendering took longer than %s; the render was stopped",
		outOfMemory: "the render needed more than %s of memory; the render was stopped",
		tooLarge:    "the render's output exceeds %s (--catalyst-render-max-bytes)",
	})
	if err != nil {
		return nil, err
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("render process: %w", err)
	}
	if res.Error != "" {
		return nil, errors.New(res.Error)
	}
	r := &Rendered{}
	for _, raw := range res.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("render process: %w", err)
		}
		r.Objects = append(r.Objects, u)
	}
	if typ == TypeHelm {
		ch, err := Chart(dir, in)
		if err != nil {
			return nil, err
		}
		r.Chart = ch
	}
	return r, nil
}

// childMessages are the messages of a child's overruns, each with %s for the limit.
type childMessages struct {
	timeout, outOfMemory, tooLarge string
}

// runChild runs the executable of limits as a child with req on its standard input, killed after
// timeout, at limits' memory, or at its output's byte beyond maxOut, and returns its output.
func runChild(ctx context.Context, limits Limits, timeout time.Duration, req []byte, maxOut int64, msgs childMessages) ([]byte, error) {
	exe := limits.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.Stdin = bytes.NewReader(req)
	stderr := &limitedBuffer{max: maxStderr}
	cmd.Stderr = stderr
	// The pipes are closed this long after the child is killed, whatever it left running.
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("render: start the render process: %w", err)
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, maxOut+1))
	tooLarge := int64(len(out)) > maxOut
	if tooLarge {
		// Stopped at the byte beyond the limit: the child is killed, not read to its end.
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case tooLarge:
		return nil, fmt.Errorf("%w: "+msgs.tooLarge, ErrTooLarge, byteSize(maxOut))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%w: "+msgs.timeout, ErrTimedOut, timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case strings.Contains(stderr.String(), renderTimedOut):
		// A Helm action's rendering of the chart overran the render's timeout: the child ended itself.
		return nil, fmt.Errorf("%w: rendering the chart took longer than %s; the Helm action was stopped", ErrTimedOut, limits.Timeout)
	case outOfMemory(stderr.String()):
		return nil, fmt.Errorf("%w: "+msgs.outOfMemory, ErrOutOfMemory, byteSize(limits.MemoryBytes))
	case waitErr != nil || readErr != nil:
		return nil, fmt.Errorf("render process failed: %v %s", errors.Join(waitErr, readErr), firstLine(stderr.String()))
	}
	return out, nil
}

// MaybeChild renders and exits when the process is a render's child (ChildEnv), and returns otherwise.
// The operator's main calls it first thing.
func MaybeChild() {
	if os.Getenv(ChildEnv) != "1" {
		return
	}
	os.Exit(child(os.Stdin, os.Stdout))
}

func child(stdin io.Reader, stdout io.Writer) int {
	var req childRequest
	if err := json.NewDecoder(io.LimitReader(stdin, maxHelmRequest)).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "render child:", err)
		return 2
	}
	if req.MemoryBytes > 0 {
		// The Go runtime collects hard near the soft limit; past the hard one (RLIMIT_DATA) an
		// allocation fails and the process ends ("out of memory"), which the parent reports. The
		// watchdog is a second line, and the only one in a race-instrumented binary.
		debug.SetMemoryLimit(req.MemoryBytes * 3 / 4)
		if !raceEnabled {
			lim := &syscall.Rlimit{Cur: uint64(req.MemoryBytes), Max: uint64(req.MemoryBytes)}
			if err := syscall.Setrlimit(syscall.RLIMIT_DATA, lim); err != nil {
				fmt.Fprintln(os.Stderr, "render child: RLIMIT_DATA:", err)
				return 2
			}
		}
		go watchdog(req.MemoryBytes)
	}
	if req.Helm != nil {
		if err := json.NewEncoder(stdout).Encode(helmChild(req.Helm)); err != nil {
			return 2
		}
		return 0
	}
	res := childResult{}
	var objs []*unstructured.Unstructured
	var err error
	switch req.Type {
	case TypeHelm:
		var ch *chart.Chart
		if ch, err = Chart(req.Dir, req.Input); err == nil {
			objs, err = Helm(ch, req.Input)
		}
	case TypeKustomize:
		objs, err = Kustomize(req.Dir, req.Input)
	default:
		objs, err = Manifests(req.Dir, req.Input)
	}
	if err != nil {
		res.Error = err.Error()
	}
	for _, o := range objs {
		b, err := o.MarshalJSON()
		if err != nil {
			res.Error = err.Error()
			break
		}
		res.Objects = append(res.Objects, b)
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// watchdog ends the child, as out of memory, once the Go runtime holds more than limit bytes.
func watchdog(limit int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > uint64(limit) {
			fmt.Fprintln(os.Stderr, "render child: out of memory")
			os.Exit(3)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// outOfMemory is whether a child's error output says it ran out of its memory (RLIMIT_DATA): an
// allocation, or a thread's stack, that could not be had.
func outOfMemory(stderr string) bool {
	for _, m := range []string{"out of memory", "cannot allocate memory", "failed to create new OS thread", "pthread_create failed"} {
		if strings.Contains(stderr, m) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// byteSize shows a byte count the way the limits are written.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
