package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Child is one child process (a component, an operator under test): its own process group, so a Ctrl-C
// in the terminal reaches only the parent, which then stops it in order; and, on Linux, a parent-death
// signal, so a parent killed with SIGKILL does not leave it running.
type Child struct {
	name string
	cmd  *exec.Cmd
	out  io.Closer // the log file, when there is one

	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// StartChild starts path with args and env; its output goes to out (nil discards it), which is closed
// when the process exits.
func StartChild(name, path string, args, env []string, out io.WriteCloser) (*Child, error) {
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		if out != nil {
			_ = out.Close()
		}
		return nil, fmt.Errorf("%s: no executable %s: %w", name, path, ErrNoExecutable)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		if out != nil {
			_ = out.Close()
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &Child{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if p.out != nil {
			_ = p.out.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// ErrNoExecutable is what StartChild returns when path is not an executable file.
var ErrNoExecutable = errors.New("build it first (`make controlplane-full` builds the control plane into bin/k8s/" + KubernetesVersion + ", `make build` the operator into bin/)")

// PID is the process id.
func (p *Child) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Child) Done() <-chan struct{} { return p.done }

// Err is how the process exited (nil for status 0); it is meaningful once Done is closed.
func (p *Child) Err() error {
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}

// Kill sends SIGKILL to the process group, as a crash or an OOM kill would, and waits for the exit.
func (p *Child) Kill() error {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.PID())
	}
}

// WaitReady polls ready every 100ms until it returns nil, the process exits, ctx ends or timeout passes;
// the error then says what the last check returned.
func (p *Child) WaitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("%s exited before it was ready: %v (last check: %v)", p.name, p.waitErr, last)
		default:
		}
		err := ready(ctx)
		if err == nil {
			return true, nil
		}
		// A check the deadline cut short says less than the one before it.
		if ctx.Err() == nil || last == nil {
			last = err
		}
		return false, nil
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("%s not ready after %s: %w (last check: %v)", p.name, timeout, err, last)
	}
	return err
}

// Stop sends SIGTERM to the process group, waits up to timeout, then sends SIGKILL and waits for the exit.
// It is idempotent, and an error says the process had to be killed.
func (p *Child) Stop(timeout time.Duration) error {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return // already gone (it crashed, or was killed): nothing to stop
		default:
		}
		pgid := -p.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(timeout):
		}
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		select {
		case <-p.done:
			p.stopErr = fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.name, timeout)
		case <-time.After(10 * time.Second):
			p.stopErr = fmt.Errorf("%s (pid %d) did not exit even after SIGKILL", p.name, p.PID())
		}
	})
	return p.stopErr
}

// output opens where a process's output goes: <LogDir>/<name>.log when Options.LogDir is set, else
// Options.ControlPlaneOutput, else nowhere.
func (c *Cluster) output(name string) (io.WriteCloser, error) {
	if c.opts.LogDir != "" {
		if err := os.MkdirAll(c.opts.LogDir, 0o755); err != nil {
			return nil, err
		}
		return os.Create(filepath.Join(c.opts.LogDir, name+".log"))
	}
	if c.opts.ControlPlaneOutput != nil {
		return nopCloser{c.opts.ControlPlaneOutput}, nil
	}
	return nil, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// componentDir creates the directory a component keeps its state in, under the cluster's directory.
func (c *Cluster) componentDir(name string) (string, error) {
	dir := filepath.Join(c.dir, name)
	return dir, os.MkdirAll(dir, 0o700)
}

// HealthCheck returns a readiness check that GETs url and wants 200. Components serve it on 127.0.0.1 with a
// self-signed certificate they made at start-up, so the check does not verify it: it only asks whether
// the process is up, and sends nothing secret.
func HealthCheck(url string) func(context.Context) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health check of a self-signed server
			Proxy:           nil,
		},
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
		}
		return nil
	}
}
