// Package redistest runs a real Redis server (Debian's redis-server; `make redis-server` installs it) on
// 127.0.0.1 for tests: started once per test package, stopped when the package's tests end, and killed
// by the kernel if the test binary dies first.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/platform-operator/platform-operator/internal/testutil"
)

// Binary is the redis-server the tests run; REDIS_SERVER overrides it.
var Binary = "/usr/bin/redis-server"

// Server is a running redis-server.
type Server struct {
	// Host and Port are where it listens (127.0.0.1 and a free port).
	Host string
	Port int
	// Password is what AUTH needs for the default user; empty: no password.
	Password string

	cmd    *exec.Cmd
	out    *testutil.SyncBuffer
	exited chan struct{}
}

// Options configure Start.
type Options struct {
	// Password, when set, is required of the default user (requirepass).
	Password string
}

// Start runs a redis-server that keeps nothing on disk and waits until it answers PING.
func Start(opts Options) (*Server, error) {
	bin := Binary
	if env := os.Getenv("REDIS_SERVER"); env != "" {
		bin = env
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("redistest: %s not found; run `make redis-server` (apt-get install redis-server): %w", bin, err)
	}
	ports, err := testutil.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--protected-mode", "yes"}
	if opts.Password != "" {
		args = append(args, "--requirepass", opts.Password)
	}
	s := &Server{Host: "127.0.0.1", Port: port, Password: opts.Password, out: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = sysProcAttr()
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("redistest: start %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		_ = os.RemoveAll(dir)
		close(s.exited)
	}()
	if err := s.waitReady(10 * time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Stop kills the server and waits for it to exit.
func (s *Server) Stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

func (s *Server) waitReady(limit time.Duration) error {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), Password: s.Password, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("redistest: redis-server exited: %s", s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("redistest: redis-server on %s did not answer PING within %s: %s", s.Addr(), limit, s.out.String()), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ClosedPort is a port on 127.0.0.1 where nothing listens (it was free a moment ago): an unreachable
// server for tests.
func ClosedPort() (int, error) {
	ports, err := testutil.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
